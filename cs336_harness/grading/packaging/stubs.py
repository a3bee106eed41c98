"""Replace the body of every function and method in a Python source with `raise
NotImplementedError`, keeping everything outside the bodies byte for byte (the text is cut
at the positions `ast` reports); private helpers are stubbed too: they hold implementation."""

from __future__ import annotations

import ast

STUB = b"raise NotImplementedError"
FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


def _outermost_functions(tree: ast.AST) -> list[FunctionNode]:
    """Functions not inside another function (methods count: classes are walked into)."""
    found: list[FunctionNode] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, FunctionNode):
                found.append(child)
            else:
                visit(child)

    visit(tree)
    return found


def _docstring(function: FunctionNode) -> ast.stmt | None:
    first = function.body[0]
    is_string = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
    return first if is_string and isinstance(first.value.value, str) else None


def _offset(line_starts: list[int], lineno: int, col: int) -> int:
    """Byte offset of (1-based line, byte column), the coordinates ast reports."""
    return line_starts[lineno - 1] + col


def stub_source(source: bytes) -> bytes:
    """`source` with every function body replaced by `raise NotImplementedError`."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    line_starts = [0]
    for line in lines:
        line_starts.append(line_starts[-1] + len(line))
    edits: list[tuple[int, int, bytes]] = []
    for function in _outermost_functions(tree):
        docstring = _docstring(function)
        first = function.body[0]
        indent = b" " * first.col_offset
        # The body's last line is replaced to its end, so a trailing comment goes too.
        last_line = lines[function.end_lineno - 1]
        end = line_starts[function.end_lineno - 1] + len(last_line.rstrip(b"\r\n"))
        if docstring is not None:
            start = _offset(line_starts, docstring.end_lineno, docstring.end_col_offset)
            edits.append((start, end, b"\n" + indent + STUB))
        else:
            start = _offset(line_starts, first.lineno, first.col_offset)
            edits.append((start, end, STUB))
    for start, end, text in sorted(edits, reverse=True):
        source = source[:start] + text + source[end:]
    return source


def without_private_functions(source: bytes) -> bytes:
    """`source` without its top-level functions named `_*` (and their decorators): helpers of
    the implementation, which a student's own version need not have."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    private = [node for node in tree.body if isinstance(node, FunctionNode)
               and node.name.startswith("_")]  # fmt: skip
    for function in reversed(private):
        first = min([function.lineno, *(d.lineno for d in function.decorator_list)])
        end = function.end_lineno
        # The blank lines before it go too, so the file keeps its spacing.
        while first > 1 and not lines[first - 2].strip():
            first -= 1
        del lines[first - 1 : end]
    return b"".join(lines)


def with_docstring(source: bytes, docstring: str) -> bytes:
    """`source` with its module docstring replaced by `docstring`."""
    tree = ast.parse(source)
    first = tree.body[0] if tree.body else None
    if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)):
        raise ValueError("the source has no module docstring to replace")
    lines = source.splitlines(keepends=True)
    head = b"".join(lines[: first.lineno - 1])
    return head + f'"""{docstring}"""\n'.encode() + b"".join(lines[first.end_lineno :])
