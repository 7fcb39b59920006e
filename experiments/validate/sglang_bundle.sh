#!/usr/bin/env bash
# sglang_bundle.sh: SGLang 0.5.17 (the newest release built for PyTorch 2.11, the GPU machines' own) and
# the packages it imports that those machines lack, for a machine that reaches no network, in parts
# small enough to travel one a call.
#
# The packages are the release's own pins where it pins them, fetched as wheels without their
# dependencies. Left out, because the LLaDA2 dLLM path on a Hopper GPU never loads them: sglang-kernel's
# FlashAttention 3, FlashMLA, Blackwell and InfLLM libraries (1.2 GB of its 1.2 GB), FlashInfer's
# precompiled kernels (it compiles what it runs on first use), TileLang, the Triton fork, Mistral's
# tokenizers, the grammar backends, Anthropic's and ModelScope's clients. IPython and xgrammar are
# imported at the top of files the engine loads and never called here: experiments/validate/
# sglang_hook/sitecustomize.py stands in for them (SGLANG_STAND_INS).
#
# Writes DIR/part.00, part.01, ... (PART MiB each [21]) and DIR/md5, the whole archive's. On the GPU
# machine: `cat part.* | xz -d | tar -C SITE -x` and PYTHONPATH=SITE (experiments/validate/sglang.sh).
#
# Usage: experiments/validate/sglang_bundle.sh DIR   (needs pip reaching PyPI, and xz)
set -euo pipefail
dir=${1:?usage: sglang_bundle.sh DIR}
part=${PART:-21}
pins="aiocontextvars==0.2.2 annotated_types==0.8.0 apache_tvm_ffi==0.1.11 compressed_tensors==0.20.1
cuda_python==13.4.4 cuda_tile==1.7.0 dill==0.4.1 diskcache==5.6.3 distro==1.9.0 docstring_parser==0.18.0
easydict==1.14 fastapi==0.165.0 flashinfer_python==0.6.15.post1 gguf==0.19.0 httpcore2==2.16.2
httpx2==2.16.2 httpx2_jsfetch==1.0 importlib_resources==7.1.0 jiter==0.19.0 loguru==0.7.3
msgspec==0.22.0 nest_asyncio==1.6.0 openai==2.6.1 opentelemetry_api==1.45.2 orjson==3.13.0
partial_json_parser==0.2.1.1.post7 pybase64==1.5.1 pydantic==2.14.4 pydantic_core==2.50.5
pydantic_extra_types==2.11.1 pyelftools==0.33 python_multipart==0.0.34 pyzmq==27.3.0 setproctitle==1.3.8
sgl_deep_gemm==0.1.5.post1 sglang==0.5.17 sniffio==1.3.1 starlette==1.10.0 tomlkit==0.15.2
torch_c_dlpack_ext==0.1.5 truststore==0.10.5 typing_inspection==0.4.5 uvicorn==0.54.0 watchfiles==1.3.0"
plat=()
for p in manylinux_2_34 manylinux_2_31 manylinux_2_28 manylinux_2_27 manylinux_2_24 manylinux_2_17 manylinux2014 manylinux_2_5 manylinux1; do
    plat+=(--platform "${p}_x86_64")
done
plat+=(--platform any)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck disable=SC2086 # the pins are words
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp "${plat[@]}" \
    -d "$tmp/wheels" $pins sglang-kernel==0.4.5
python3 -m pip install -q --no-deps --no-compile --ignore-requires-python --only-binary=:all: --python-version 3.12 \
    --implementation cp "${plat[@]}" --target "$tmp/site" "$tmp"/wheels/*.whl
rm -f "$tmp"/site/sgl_kernel/flash_ops.* "$tmp"/site/sgl_kernel/flashmla_ops.* "$tmp"/site/sgl_kernel/infllm_ops.*
rm -rf "$tmp/site/sgl_kernel/sm100"
mkdir -p "$dir"
rm -f "$dir"/part.*
tar -C "$tmp/site" -cf - . | xz -T0 -6 >"$tmp/site.tar.xz"
md5sum <"$tmp/site.tar.xz" | cut -c1-32 >"$dir/md5"
split -b "${part}m" -d "$tmp/site.tar.xz" "$dir/part."
ls -l "$dir"
