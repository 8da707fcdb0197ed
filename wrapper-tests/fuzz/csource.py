"""A small C scanner for the edit fuzzer: tokens (comments, strings and
preprocessor lines kept apart), the function definitions of a file with
their bodies, and the constant initializers at file scope. It works on the
source as written (not preprocessed), so it can be fooled by braces under
#if; an edit made from a wrong guess fails to compile and is discarded.
"""

import re
from dataclasses import dataclass, field

TOKEN_RE = re.compile(
    r"""
     (?P<ws>[ \t\r\f\v]+|\\\n)
    |(?P<nl>\n)
    |(?P<comment>/\*.*?\*/|//(?:\\\n|[^\n])*)
    |(?P<str>"(?:\\.|\\\n|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')
    |(?P<num>\.?[0-9](?:[eEpP][+-]|[0-9A-Za-z_.])*)
    |(?P<ident>[A-Za-z_][A-Za-z_0-9]*)
    |(?P<punct>>>=|<<=|\.\.\.|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^]=|\#\#
       |[][(){}.,;:?~!<>=+\-*/%&|^\#@$`\\])
    """,
    re.X | re.S,
)

# A preprocessor directive: from '#' at the start of a line to the end of
# the logical line (backslash continuations, comments inside).
PP_RE = re.compile(r"\#(?:\\\n|/\*.*?\*/|[^\n])*", re.S)


@dataclass
class Token:
    kind: str  # ident, num, str, punct, pp
    text: str
    start: int
    end: int
    # Under an #else/#elif branch or #if 0: left out of the structure (the
    # usual ctags rule: only the first branch of a conditional counts).
    inactive: bool = False


PP_DIRECTIVE_RE = re.compile(r"\#\s*(\w+)\s*(.*)", re.S)


def tokenize(src):
    """Tokens without whitespace and comments; a preprocessor line is one
    'pp' token."""
    toks = []
    i, n = 0, len(src)
    line_start = True
    # One entry per open conditional: is the current branch inactive?
    conditionals = []
    while i < n:
        if line_start:
            j = i
            while j < n and src[j] in " \t":
                j += 1
            if j < n and src[j] == "#":
                m = PP_RE.match(src, j)
                d = PP_DIRECTIVE_RE.match(m.group(0))
                word, rest = (d.group(1), d.group(2).strip()) if d else ("", "")
                if word in ("if", "ifdef", "ifndef"):
                    conditionals.append(word == "if" and rest.startswith("0"))
                elif word in ("else", "elif", "elifdef", "elifndef") and conditionals:
                    conditionals[-1] = True
                elif word == "endif" and conditionals:
                    conditionals.pop()
                toks.append(Token("pp", m.group(0), j, m.end()))
                i = m.end()
                continue
        m = TOKEN_RE.match(src, i)
        if not m:
            # A stray byte (e.g. in a non-ASCII comment-free region): skip it.
            i += 1
            line_start = False
            continue
        kind = m.lastgroup
        if kind == "nl":
            line_start = True
        elif kind == "comment":
            line_start = False
        elif kind != "ws":
            toks.append(Token(kind, m.group(0), m.start(), m.end(), any(conditionals)))
            line_start = False
        i = m.end()
    return toks


@dataclass
class Function:
    name: str
    static: bool
    prefix_start: int  # offset where the declaration begins
    open_index: int  # token index of the body's '{'
    close_index: int  # token index of the body's '}'
    tokens: list = field(repr=False, default=None)

    @property
    def body_start(self):
        return self.tokens[self.open_index].end

    @property
    def body_end(self):
        return self.tokens[self.close_index].start

    def body_tokens(self):
        """(index, token) pairs inside the body, preprocessor lines left out."""
        return [
            (k, self.tokens[k])
            for k in range(self.open_index + 1, self.close_index)
            if self.tokens[k].kind != "pp" and not self.tokens[k].inactive
        ]


@dataclass
class ConstInit:
    """A file-scope `const` object's initializer: the numbers in it."""

    name: str
    numbers: list  # token indices


def _match(toks, i, step, open_t, close_t):
    """The index of the token that closes the bracket at i, walking in
    direction step (1: i opens, -1: i closes), or None."""
    depth = 0
    end = len(toks) if step > 0 else -1
    for k in range(i, end, step):
        t = toks[k]
        if t.kind != "punct" or t.inactive:
            continue
        if t.text == open_t:
            depth += step
        elif t.text == close_t:
            depth -= step
        if depth == 0 and t.text in (open_t, close_t):
            return k
    return None


def scan(src):
    """Returns (tokens, functions, const_inits) of a C file."""
    toks = tokenize(src)
    functions, inits = [], []
    stmt_start = 0
    i = 0
    while i < len(toks):
        t = toks[i]
        if t.kind == "pp":
            stmt_start = i + 1
            i += 1
            continue
        if t.kind != "punct" or t.inactive:
            i += 1
            continue
        if t.text == ";":
            stmt = [x for x in toks[stmt_start:i] if not x.inactive]
            texts = [x.text for x in stmt]
            if "=" in texts and "const" in texts[: texts.index("=")] and "typedef" not in texts:
                eq = texts.index("=")
                name = next(
                    (x.text for x in reversed(stmt[:eq]) if x.kind == "ident"),
                    "?",
                )
                nums = [
                    k
                    for k in range(stmt_start, i)
                    if toks[k].kind == "num" and not toks[k].inactive and toks[k].start > stmt[eq].start
                ]
                if nums:
                    inits.append(ConstInit(name, nums))
            stmt_start = i + 1
            i += 1
            continue
        if t.text == "{":
            close = _match(toks, i, 1, "{", "}")
            if close is None:
                # Unbalanced (braces under #if that the first-branch rule
                # did not pair): give up on this statement, resync at the
                # next token.
                i += 1
                stmt_start = i
                continue
            stmt_texts = [x.text for x in toks[stmt_start:i] if not x.inactive]
            prev = next((x for x in reversed(toks[stmt_start:i]) if not x.inactive), None)
            if prev is not None and prev.text == ")" and "=" not in stmt_texts:
                open_paren = _match(toks, i - 1, -1, "(", ")")
                if open_paren and open_paren > stmt_start and toks[open_paren - 1].kind == "ident":
                    functions.append(
                        Function(
                            name=toks[open_paren - 1].text,
                            static="static" in stmt_texts,
                            prefix_start=toks[stmt_start].start,
                            open_index=i,
                            close_index=close,
                            tokens=toks,
                        )
                    )
                i = close + 1
                stmt_start = i
                continue
            # struct/union/enum bodies and initializers: the statement goes
            # on to its ';'.
            i = close + 1
            continue
        i += 1
    return toks, functions, inits
