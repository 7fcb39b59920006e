#!/usr/bin/env bash
# shellcheck disable=SC2015 # CHECK && ok || bad WHAT: ok and bad always succeed, so one of them runs
# sql_text_test.sh: no script builds SQL from data. Every script of analysis/ and experiments/ (each
# *.sh, in their subfolders too, but experiments/records/, whose scripts are kept as they ran and run
# from nowhere) is read as bash reads it, and each sqlite3 command in it (a line of its own, in
# $(...) or `...`, behind a pipe, env or timeout; not one in a quoted string or a heredoc of another
# program) is held to two rules:
#   (a) its database is :memory: or a file in the script's own scratch folder: a path that begins
#       with $tmp/ (or ${tmp}/), in a script that sets tmp=$(mktemp ...). A run's or a user's database
#       is read through `tessera db export`, never opened by sqlite3;
#   (b) its SQL text (the arguments after the database, -cmd's value, and its stdin where no argument
#       holds SQL: a heredoc or here-string, or a pipe or file, which cannot be read here) holds no
#       shell expansion ($name, ${name...}, $N, $@, $(...), `...`; \$ and single quotes expand
#       nothing) but of a variable the same file checks with a regex anchored at both ends,
#       [[ $name =~ ^...$ ]], or sets from arithmetic, name=$((...)) or for ((name = ...)). A value
#       read from a file reaches sqlite3 on its stdin instead (readfile('/dev/stdin'), .import).
# Each script scanned is a check, and each finding one more, a failure: "sql_text: FAIL FILE:LINE:
# what". First the scanner reads a script written here, with five calls that break a rule and two
# that keep them beside a Python heredoc, and must name those five lines and no other, so that it
# cannot pass by finding nothing.
# Usage: tests/sql_text_test.sh   Prints "sql_text: N passed, M failed".
set -u
cd "$(dirname "$0")/.." || exit 2
TEST=sql_text
# shellcheck source=tests/lib_cli.sh
source tests/lib_cli.sh
command -v python3 >/dev/null || { bad "python3 not found (it reads the scripts)"; finish; exit 1; }

# the scanner: python3 -c "$scanner" FILE... prints "FILE:LINE: what" a finding
scanner=$(
    cat <<'PY'
import re, sys

META = set(' \t\n;&|<>()')
RESERVED = {'if', 'then', 'else', 'elif', 'do', 'while', 'until', '!', 'time', '{', '}', 'fi', 'done', 'esac'}
VALUED = {'-separator', '-newline', '-cmd', '-nullvalue', '-init', '-vfs', '-mmap', '-heap', '-lookaside',
          '-pagecache', '-maxsize'}


class Cmd:
    def __init__(self, line):
        self.line, self.words, self.stdin, self.piped = line, [], None, False


class Lexer:
    """A bash text read into simple commands (those inside $(...), `...` and heredocs too), each
    word a list of parts: ('text', s) literal, ('var', name) an expansion, ('cmd', [Cmd]) a command
    substitution, ('arith', s) arithmetic."""

    def __init__(self, s, line0, found):
        self.s, self.i, self.line0, self.found, self.heredocs = s, 0, line0, found, []

    def line(self, i=None):
        return self.line0 + self.s.count('\n', 0, self.i if i is None else i)

    def peek(self, k=0):
        return self.s[self.i + k] if self.i + k < len(self.s) else ''

    def parse(self, stop=None):
        cmds, cur, piped, cases = [], None, False, 0  # cases: the case commands open (their patterns end in ')')
        while self.i < len(self.s):
            c = self.peek()
            if c in ' \t':
                self.i += 1
            elif c == '\\' and self.peek(1) == '\n':
                self.i += 2
            elif c == '#' and (self.i == 0 or self.s[self.i - 1] in ' \t\n;&|()'):
                while self.i < len(self.s) and self.peek() != '\n':
                    self.i += 1
            elif c == '\n':
                self.i += 1
                cur, piped = self.end(cur, cmds), False
                self.read_heredocs()
            elif stop and c == stop and not cases:
                self.i += 1
                self.end(cur, cmds)
                return cmds
            elif c in ';&|':
                op = c
                self.i += 1
                if self.peek() in ';&|>':
                    op += self.peek()
                    self.i += 1
                cur = self.end(cur, cmds)
                piped = op in ('|', '|&')
            elif c == '(':
                words = [w[1] for w in cur.words] if cur else []
                if self.peek(1) == '(' and (not words or words == ['for']):
                    self.skip_parens()  # (( arithmetic )) or for (( ... ))
                elif words and words[-1].endswith('='):
                    self.i += 1
                    self.parse(')')  # an array's words: their $(...) are read, the array is no command
                elif len(words) == 1 and self.s.startswith('()', self.i):
                    self.i += 2
                    cur = self.end(cur, cmds)
                else:
                    self.i += 1
                    cur = self.end(cur, cmds)
                    self.parse(')')
            elif c == ')':
                self.i += 1  # a case pattern's end
                cur = self.end(cur, cmds)
            elif c in '<>':
                cur = cur or Cmd(self.line())
                self.redirect(cur)
            else:
                cur = cur or Cmd(self.line())
                if not cur.words:
                    cur.piped = piped
                bracket = bool(cur.words) and cur.words[0][1] == '[['
                start = self.i
                parts = self.word(bracket)
                raw = self.s[start:self.i]
                if raw.isdigit() and self.peek() in '<>':
                    continue  # a redirect's fd
                cur.words.append((parts, raw))
                if raw == 'case' and len(cur.words) == 1:
                    cases += 1
                elif raw == 'esac' and len(cur.words) == 1:
                    cases -= 1
        self.end(cur, cmds)
        return cmds

    def end(self, cur, cmds):
        if cur and cur.words:
            cmds.append(cur)
            self.found.append(cur)
        return None

    def skip_parens(self):
        depth = 0
        while self.i < len(self.s):
            c = self.peek()
            self.i += 1
            if c == '(':
                depth += 1
            elif c == ')':
                depth -= 1
                if depth == 0:
                    return

    def redirect(self, cur):
        op = ''
        while self.peek() in '<>&' and self.peek() and len(op) < 3:
            op += self.peek()
            self.i += 1
        if op in ('<', '>') and self.peek() == '(':  # <(...) process substitution
            self.i += 1
            self.parse(')')
            return
        while self.peek() in ' \t':
            self.i += 1
        if op == '<<' and self.peek() == '-':
            self.i += 1
        start = self.i
        parts = self.word(False)
        raw = self.s[start:self.i]
        if op == '<<':
            heredoc = {'delim': re.sub(r'[\'"\\]', '', raw), 'quoted': bool(re.search(r'[\'"\\]', raw)),
                       'strip': self.s[start - 1] == '-', 'parts': None}
            self.heredocs.append(heredoc)
            cur.stdin = ('heredoc', heredoc)
        elif op == '<<<':
            cur.stdin = ('herestring', parts)
        elif op == '<':
            cur.stdin = ('file', raw)

    def read_heredocs(self):
        for h in self.heredocs:
            body_start = self.i
            line0 = self.line()
            while self.i < len(self.s):
                end = self.s.find('\n', self.i)
                end = len(self.s) if end < 0 else end
                text = self.s[self.i:end]
                self.i = end + 1
                if (text.lstrip('\t') if h['strip'] else text) == h['delim']:
                    break
            if not h['quoted']:
                body = Lexer(self.s[body_start:self.i], line0, self.found)
                h['parts'] = body.text_until(None)
        self.heredocs = []

    def word(self, bracket):
        parts = []
        while self.i < len(self.s):
            c = self.peek()
            if c in ' \t\n' or (c in META and not bracket) or (bracket and c in '\n'):
                if c in '<>' and self.peek(1) == '(' and not bracket:
                    self.i += 2
                    parts.append(('cmd', self.parse(')')))
                    continue
                break
            if c == '\\':
                if self.peek(1) != '\n':
                    parts.append(('text', self.peek(1)))
                self.i += 2
            elif c == "'":
                end = self.s.find("'", self.i + 1)
                end = len(self.s) if end < 0 else end
                parts.append(('text', self.s[self.i + 1:end]))
                self.i = end + 1
            elif c == '"':
                self.i += 1
                parts += self.text_until('"')
            elif c == '$':
                parts += self.dollar(True)
            elif c == '`':
                parts.append(self.backtick())
            else:
                parts.append(('text', c))
                self.i += 1
        return parts

    def text_until(self, quote):
        """A double-quoted text's parts (or a heredoc body's, quote None), up to its closing quote."""
        parts = []
        while self.i < len(self.s):
            c = self.peek()
            if quote and c == quote:
                self.i += 1
                break
            if c == '\\' and self.peek(1) in '$`"\\\n':
                parts.append(('text', self.peek(1)))
                self.i += 2
            elif c == '$':
                parts += self.dollar(False)
            elif c == '`':
                parts.append(self.backtick())
            else:
                parts.append(('text', c))
                self.i += 1
        return parts

    def backtick(self):
        start = self.i + 1
        self.i = start
        while self.i < len(self.s) and self.peek() != '`':
            self.i += 2 if self.peek() == '\\' else 1
        inner = Lexer(self.s[start:self.i], self.line(start), self.found)
        self.i += 1
        return ('cmd', inner.parse())

    def dollar(self, unquoted):
        nxt = self.peek(1)
        if nxt == '(' and self.peek(2) == '(':
            start = self.i
            self.i += 1
            self.skip_parens()
            return [('arith', self.s[start:self.i])]
        if nxt == '(':
            self.i += 2
            return [('cmd', self.parse(')'))]
        if nxt == '{':
            start, depth = self.i + 2, 1
            self.i = start
            while self.i < len(self.s) and depth:
                c = self.peek()
                if c == '\\':
                    self.i += 1
                elif c == '{':
                    depth += 1
                elif c == '}':
                    depth -= 1
                self.i += 1
            inner = self.s[start:self.i - 1]
            Lexer(inner, self.line(start), self.found).text_until(None)  # the commands of ${name:-$(...)}
            if re.match(r'#\w', inner):
                return [('arith', inner)]  # ${#name}: a length
            m = re.match(r'!?(\w+|[@*#?$!-])', inner)
            return [('var', m.group(1) if m else inner)]
        if unquoted and nxt == "'":  # $'...': no expansion
            self.i += 2
            start = self.i
            while self.i < len(self.s) and self.peek() != "'":
                self.i += 2 if self.peek() == '\\' else 1
            self.i += 1
            return [('text', self.s[start:self.i - 1])]
        m = re.compile(r'[A-Za-z_]\w*|[0-9]|[@*#?$!-]').match(self.s, self.i + 1)
        if m:
            self.i = m.end()
            return [('var', m.group(0))]
        self.i += 1
        return [('text', '$')]


def literal(parts):
    return ''.join(t for k, t in parts if k == 'text') if all(k == 'text' for k, _ in parts) else None


def expansions(parts):
    """The expansions a text's parts hold: ('var', name) and ('cmd', None) for $(...) and `...`."""
    out = []
    for kind, value in parts:
        if kind == 'var' and value not in ('#', '?', '$', '!', '-'):
            out.append(('var', value))
        elif kind == 'cmd':
            out.append(('cmd', None))
    return out


def command_words(cmd):
    """The words from the command's name on: reserved words, assignments and wrappers left out."""
    words = list(cmd.words)
    while words:
        lit = literal(words[0][0])
        if lit is None:
            return words
        if lit in RESERVED or re.match(r'[A-Za-z_]\w*(\[[^]]*\])?\+?=', words[0][1]):
            words.pop(0)
        elif lit in ('command', 'exec', 'nice', 'nohup', 'env'):
            words.pop(0)
            while words and (re.match(r'-|[A-Za-z_]\w*=', words[0][1])):
                words.pop(0)
        elif lit == 'timeout':
            words.pop(0)
            while words and words[0][1].startswith('-'):
                words.pop(0)
            words = words[1:]
        else:
            return words
    return words


def scan(path):
    text = open(path, encoding='utf-8', errors='replace').read()
    code = '\n'.join(l for l in text.split('\n') if not l.lstrip().startswith('#'))
    checked = set(re.findall(r'\[\[\s+"?\$\{?(\w+)\}?"?\s+=~\s+\'?\^[^\s\']*\$\'?\s', code))
    checked |= set(re.findall(r'(?:^|[\s;(&|])(?:local\s+|declare\s+(?:-\w+\s+)*)?(\w+)=\$\(\(', code, re.M))
    checked |= set(re.findall(r'\bfor\s*\(\(\s*(\w+)\s*=', code))
    own_tmp = re.search(r'(?:^|[\s;(&|])(?:local\s+)?tmp=\$\(mktemp\b', code, re.M) is not None
    found = []
    Lexer(text, 1, found).parse()
    findings = []
    for cmd in found:
        words = command_words(cmd)
        name = literal(words[0][0]) if words else None
        if name is None or name.rsplit('/', 1)[-1] != 'sqlite3':
            continue
        args, sql, db, k = words[1:], [], None, 0
        while k < len(args):
            parts, raw = args[k]
            lit = literal(parts)
            if db is None and (lit or raw).startswith('-'):
                opt = '-' + (lit or raw).lstrip('-')
                if opt in VALUED and k + 1 < len(args):
                    if opt == '-cmd':
                        sql.append(args[k + 1][0])
                    k += 1
            elif db is None:
                db = (parts, raw)
            else:
                sql.append(parts)
            k += 1
        where = f'{path}:{cmd.line}'
        if db is not None:
            lit = literal(db[0])
            under_tmp = re.match(r'"?\$(tmp|\{tmp\})/', db[1]) is not None and own_tmp
            if lit != ':memory:' and not under_tmp:
                findings.append(f'{where}: sqlite3 opens {db[1]}: not :memory: nor a file under the script\'s own $tmp '
                                '(read a database through tessera db export)')
        if not sql:
            kind = cmd.stdin[0] if cmd.stdin else ('pipe' if cmd.piped else None)
            if kind == 'heredoc':
                sql.append(cmd.stdin[1]['parts'] or [])
            elif kind == 'herestring':
                sql.append(cmd.stdin[1])
            elif kind in ('file', 'pipe'):
                findings.append(f'{where}: sqlite3 reads its SQL text from a {kind}, which this test cannot read')
        said = set()
        for parts in sql:
            for kind, name in expansions(parts):
                if kind == 'cmd' and 'cmd' not in said:
                    said.add('cmd')
                    findings.append(f'{where}: SQL text holds a command\'s output ($(...) or `...`)')
                elif kind == 'var' and name not in checked and name not in said:
                    said.add(name)
                    findings.append(f'{where}: SQL text holds ${name}, which the file checks with no '
                                    f'[[ ${name} =~ ^...$ ]] nor sets from $((...))')
    return findings


for path in sys.argv[1:]:
    for f in scan(path):
        print(f)
PY
)

# the scanner finds what it must: line 4 opens a database not the script's; 5, 6, 8 and 14 paste $x,
# ${y:-0} (on the call's second line), $z (in $(...)) and $u (in a heredoc of SQL); nothing in the
# safe calls (a checked number, \$, single quotes, the script's own $tmp) nor in Python's sqlite3
mkdir -p "$tmp/synthetic"
cat >"$tmp/synthetic/pasted.sh" <<'SH'
#!/usr/bin/env bash
tmp=$(mktemp -d)
[[ $n =~ ^[0-9]+$ ]] || exit 2
sqlite3 "$db" "SELECT 1"
sqlite3 :memory: "SELECT $x"
sqlite3 -separator ' ' :memory: "SELECT 1,
    ${y:-0}"
v=$(sqlite3 :memory: "SELECT '$z'")
sqlite3 :memory: "SELECT $n, '\$.a', json_extract(readfile('/dev/stdin'), '\$.k')" <"$f"
w=$(echo | sqlite3 "$tmp/s.db" 'SELECT $q' "SELECT $n")
python3 - "$db" <<'PY'
sqlite3.connect(sys.argv[1]).execute("SELECT 1")
PY
sqlite3 :memory: <<SQL
SELECT $u;
SQL
SH
got=$(python3 -c "$scanner" "$tmp/synthetic/pasted.sh" 2>&1 | sed -n 's/^[^:]*:\([0-9]*\): \(SQL text holds \$\([a-z]*\)\|sqlite3 opens\).*/\1 \3/p' | tr '\n' ' ')
[ "$got" = "4  5 x 6 y 8 z 14 u " ] && ok ||
    bad "the scanner found '$got' in a script of five calls that break a rule, not '4  5 x 6 y 8 z 14 u '"
n=$(python3 -c "$scanner" "$tmp/synthetic/pasted.sh" 2>&1 | wc -l)
[ "$n" -eq 5 ] && ok || bad "the scanner reported $n findings in the synthetic script, not 5"

# the scripts
mapfile -d '' -t files < <(find analysis experiments -name '*.sh' -type f ! -path 'experiments/records/*' -print0 | sort -z)
findings=$(python3 -c "$scanner" "${files[@]}" 2>&1)
rc=$?
[ "$rc" -eq 0 ] || { bad "the scanner failed (exit $rc): $(head -5 <<<"$findings")"; finish; exit 1; }
for f in "${files[@]}"; do
    mine=$(F=$f: awk 'index($0, ENVIRON["F"]) == 1' <<<"$findings")
    if [ -z "$mine" ]; then
        ok
    else
        while IFS= read -r line; do bad "$line"; done <<<"$mine"
    fi
done
finish
