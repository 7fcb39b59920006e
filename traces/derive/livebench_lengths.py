#!/usr/bin/env python3
"""Prompt lengths of LiveBench's coding category, as `--lengths livebench` carries them.

LiveBench's coding questions are LiveCodeBench problems (AtCoder and LeetCode) put in
LiveBench's coding prompt (livebench/scripts/apply_edits_to_code_completion.py in
LiveBench/LiveBench shows its shape: an instruction line, "### Question:", the problem,
"### Format:" with the starter code or a stdin/stdout request, "### Answer:"). The
problems themselves come from a public export of LiveCodeBench's 1,055 code-generation
problems (federicobrancasi/livebench-msbench, tasks/code-generation-*/instruction.md:
a header of metadata lines, the statement, an optional "## Starter Code" block and a
last line naming the answer file, of which only the statement and starter code are kept).

Tokens are counted with the Llama-2 SentencePiece vocabulary (karpathy/llama2.c's
tokenizer.bin export: 32,000 pieces with their merge scores), like the ShareGPT and arXiv
length files of shared/traces/raw: a space-prefixed word at a time, pieces merged by
highest score, bytes as fallback. LLaDA's own tokenizer is not public here; its counts
differ from these by the ratio of the two vocabularies on code and English text.

Usage: livebench_lengths.py TOKENIZER_BIN TASK_DIR
Prints the 0th..100th percentiles (21 points, every 5%) of the prompt token counts.
"""
import os
import re
import struct
import sys

INSTRUCTION = ("### Instructions: You are an expert Python programmer. You will be given a "
               "question (problem specification) and will generate a correct Python program "
               "that matches the specification and passes all tests. You will NOT return "
               "anything except for the program.\n")
FORMAT_STARTER = ("### Format: You will use the following starter code to write the solution "
                  "to the problem and enclose your code within delimiters.\n")
FORMAT_STDIN = ("### Format: Read the inputs from stdin solve the problem and write the answer "
                "to stdout (do not directly test on the sample inputs). Enclose your code within "
                "delimiters as follows. Ensure that when the python program runs, it reads the "
                "inputs, runs the algorithm and writes output to STDOUT.\n")
ANSWER = "### Answer: (use the provided format with backticks)\n\n"


def load_vocab(path):
    with open(path, "rb") as f:
        data = f.read()
    (pos,) = (4,)
    scores = {}
    while pos < len(data):
        score, n = struct.unpack_from("<fi", data, pos)
        pos += 8
        piece = data[pos:pos + n].decode("utf-8", "replace")
        pos += n
        scores.setdefault(piece, score)
    return scores


def count_word(word, scores):
    parts = []
    for ch in word:
        if ch in scores:
            parts.append(ch)
        else:
            parts.extend("<0x%02X>" % b for b in ch.encode("utf-8"))
    while len(parts) > 1:
        best, at = None, -1
        for i in range(len(parts) - 1):
            s = scores.get(parts[i] + parts[i + 1])
            if s is not None and (best is None or s > best):
                best, at = s, i
        if at < 0:
            break
        parts[at:at + 2] = [parts[at] + parts[at + 1]]
    return len(parts)


def count_tokens(text, scores):
    # SentencePiece's dummy prefix and whitespace split: each word keeps its leading space.
    words = re.findall(r" ?[^ ]+| +", " " + text)
    return sum(count_word(w, scores) for w in words)


def prompt_of(md):
    lines = md.rstrip("\n").split("\n")
    body = lines[1:]
    while body and (body[0] == "" or re.match(r"^(Source|Scenario|Difficulty|Contest|Contest date): ",
                                             body[0])):
        body = body[1:]
    text = "\n".join(body)
    starter = None
    if "\n## Starter Code\n" in text:
        text, rest = text.split("\n## Starter Code\n", 1)
        m = re.search(r"```python\n(.*?)```", rest, re.S)
        starter = m.group(1).rstrip("\n") if m else ""
    text = re.sub(r"\n*Write your final answer to `[^`]*`\.\s*$", "", text.rstrip())
    prompt = INSTRUCTION + "### Question:\n" + text.strip() + "\n\n"
    if starter is not None:
        prompt += FORMAT_STARTER + "```python\n" + starter + "\n```\n\n"
    else:
        prompt += FORMAT_STDIN + "```python\n# YOUR CODE HERE\n```\n\n"
    return prompt + ANSWER


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.split("\n\n")[-2])
    scores = load_vocab(sys.argv[1])
    counts = []
    for name in sorted(os.listdir(sys.argv[2])):
        if name.startswith("code-generation-") and name.endswith(".md"):
            with open(os.path.join(sys.argv[2], name), encoding="utf-8") as f:
                counts.append(count_tokens(prompt_of(f.read()), scores))
    counts.sort()
    n = len(counts)
    q = [counts[min(n - 1, round(k * (n - 1) / 20))] for k in range(21)]
    print("problems %d mean %.1f" % (n, sum(counts) / n))
    print("percentiles 0,5,...,100: " + ",".join(str(v) for v in q))


if __name__ == "__main__":
    main()
