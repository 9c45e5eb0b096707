"""No string-built SQL in the product: values go as parameters, identifiers through psycopg.sql.

An ``ast`` walk over the product's Python finds every call that takes SQL text — a cursor's or
connection's ``execute``/``executemany``/``copy``, ``psycopg.sql.SQL`` and the notebooks'
``lab.data.frame`` — and fails on one whose SQL argument is built from strings: an f-string with
interpolations, ``%``-formatting, ``str.format``, ``str.join`` or ``+`` with a part that is not a
literal (a local name is followed to what it was assigned). ``sql.SQL("... {} ...").format(
sql.Identifier(x))`` is the way to name a table or role at run time and passes.

Not covered, on purpose: Flink SQL (``execute_sql``/``add_insert_sql`` in ``streaming/``), which has
no bind parameters; it is DDL and queries from code constants and settings (values quoted by
``streaming.kafka_tables._quote``), and no record value ever enters it — records reach
TimescaleDB through the JDBC sink's prepared statements.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from tests.layout import product_folders

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = tuple(folder.name for folder in product_folders())

# method name -> index of the SQL argument; ``copy`` only counts with an argument (dict.copy() has none)
METHODS = {"execute": 0, "executemany": 0, "copy": 0}
FUNCTIONS = {"SQL": 0, "frame": 1}          # psycopg.sql.SQL, lab.data.frame(connection, sql, params)
COMPOSABLES = {"SQL", "Identifier", "Literal", "Placeholder", "Composed"}


def _name(func: ast.expr) -> str | None:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None


def _sql_argument(call: ast.Call) -> ast.expr | None:
    name = _name(call.func)
    if isinstance(call.func, ast.Attribute) and name in METHODS:
        index = METHODS[name]
    elif name in FUNCTIONS:
        index = FUNCTIONS[name]
    else:
        return None
    if len(call.args) > index:
        return call.args[index]
    return next((k.value for k in call.keywords if k.arg in ("query", "sql", "statement")), None)


class _Scopes:
    """Assignments to each name, per function and for the module, to follow a SQL variable."""

    def __init__(self, tree: ast.Module):
        self.parents: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
        self.tree = tree

    def scope_of(self, node: ast.AST) -> ast.AST:
        while node in self.parents:
            node = self.parents[node]
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                return node
        return self.tree

    def values(self, name: str, at: ast.AST) -> list[ast.expr]:
        """What ``name`` is assigned in the scope of ``at`` (and the module's): the expressions."""
        found = []
        for scope in {self.scope_of(at), self.tree}:
            for node in ast.walk(scope):
                if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                    found.append(node.value)
                elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(node.target, ast.Name) \
                        and node.target.id == name and node.value is not None:
                    found.append(node.value if isinstance(node, ast.AnnAssign) else
                                 ast.BinOp(ast.Name(name), node.op, node.value))
                elif isinstance(node, ast.NamedExpr) and node.target.id == name:
                    found.append(node.value)
        return found


def _static(node: ast.expr) -> bool:
    """A string fixed in the code: a literal, an f-string without fields, literals joined by + or chosen by if."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.JoinedStr):
        return all(isinstance(v, ast.Constant) for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _static(node.left) and _static(node.right)
    if isinstance(node, ast.IfExp):
        return _static(node.body) and _static(node.orelse)
    return False


def _composable(node: ast.expr) -> bool:
    """A psycopg.sql object: SQL(...), Identifier(...), their .format(...)/.join(...), or + of them."""
    if isinstance(node, ast.Call):
        name = _name(node.func)
        if name in COMPOSABLES:
            return True
        if name in ("format", "join") and isinstance(node.func, ast.Attribute):
            return _composable(node.func.value)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _composable(node.left) and _composable(node.right)
    return False


def _built(node: ast.expr, scopes: _Scopes, seen: frozenset[str] = frozenset()) -> str | None:
    """How ``node`` builds SQL from strings ("f-string", "% formatting", ...), or None when it does not."""
    if _static(node) or _composable(node):
        return None
    if isinstance(node, ast.JoinedStr):
        return "an f-string with interpolations"
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        return "%-formatting"
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return "+ concatenation of a non-literal"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("format", "join"):
        return f"str.{node.func.attr}"
    if isinstance(node, ast.IfExp):
        return _built(node.body, scopes, seen) or _built(node.orelse, scopes, seen)
    if isinstance(node, ast.Name) and node.id not in seen:
        for value in scopes.values(node.id, node):
            how = _built(value, scopes, seen | {node.id})
            if how:
                return f"{how} (through {node.id})"
    return None   # a parameter, a loop variable, a constant from elsewhere: checked where it is made


def offences(source: str, filename: str = "<snippet>") -> list[str]:
    """``file:line: how`` for every SQL call in ``source`` whose SQL is built from strings."""
    tree = ast.parse(source, filename)
    scopes = _Scopes(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            argument = _sql_argument(node)
            how = _built(argument, scopes) if argument is not None else None
            if how:
                found.append(f"{filename}:{node.lineno}: {_name(node.func)}() takes SQL built by {how}")
    return found


def product_files() -> list[Path]:
    return sorted(p for folder in PRODUCT for p in (ROOT / folder).rglob("*.py"))


def test_the_walk_covers_the_product_and_its_sql_helpers():
    files = {str(p.relative_to(ROOT)) for p in product_files()}
    for expected in ("notebooks/data.py", "notebooks/incidents.py", "pathwatch/demo.py", "db/hosts.py",
                     "tickets/service.py", "dashboards/deploy.py", "stack/timescale.py"):
        assert expected in files
    assert not any(f.startswith(("tests/", "bench/")) for f in files)


def test_no_product_code_builds_sql_from_strings():
    found = [o for p in product_files() for o in offences(p.read_text(), str(p.relative_to(ROOT)))]
    assert not found, "SQL built from strings (use parameters, or psycopg.sql.Identifier for names):\n" + "\n".join(found)


BAD = {
    "f-string": 'cursor.execute(f"SELECT * FROM t WHERE host = \'{host}\'")',
    "percent": 'connection.execute("SELECT * FROM t WHERE host = \'%s\'" % host)',
    "format": 'cursor.executemany("INSERT INTO {} VALUES (%s)".format(table), rows)',
    "plus": 'connection.execute("SELECT * FROM t WHERE host = " + host)',
    "join": 'cursor.execute(" ".join(["SELECT", column, "FROM t"]))',
    "variable": 'q = f"SELECT count(*) FROM {table}"\nconnection.execute(q)',
    "in a function": 'def f(c, t):\n    q = "SELECT * FROM " + t\n    return c.execute(q).fetchall()',
    "copy": 'with cursor.copy(f"COPY {table} FROM STDIN") as copy:\n    pass',
    "sql.SQL": 'connection.execute(sql.SQL(f"DROP TABLE {name}"))',
    "lab frame": 'frame(connection, f"SELECT {columns} FROM anomalies", {})',
    "keyword": 'cursor.execute(query="SELECT " + column)',
}

GOOD = {
    "parameters": 'cursor.execute("SELECT * FROM t WHERE host = %s", [host])',
    "named": 'connection.execute("SELECT * FROM t WHERE host = %(h)s", {"h": host})',
    "implicit concatenation": 'cursor.execute("SELECT a "\n    "FROM t WHERE b = %s", [b])',
    "literal plus literal": 'cursor.execute("SELECT a " + "FROM t")',
    "identifier": 'connection.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table)))',
    "composed": 'connection.execute(sql.SQL("{} ROLE {}").format(sql.SQL("ALTER"), sql.Identifier(r)) + sql.SQL(";"))',
    "chosen literal": 'connection.execute(sql.SQL(("ALTER" if e else "CREATE") + " ROLE {}").format(sql.Identifier(r)))',
    "literal variable": 'q = """SELECT 1"""\nconnection.execute(q)',
    "parameter of a helper": 'def frame(c, sql, params):\n    c.cursor().execute(sql, params)',
    "loop over literals": 'for s in ("GRANT {r}", "REVOKE {r}"):\n    c.execute(sql.SQL(s).format(r=sql.Identifier(x)))',
    "dict copy": 'rows = anomalies.copy()',
    "f-string in params": 'cursor.execute("SELECT %s", [f"{host}%"])',
}


@pytest.mark.parametrize("name", BAD)
def test_the_check_flags_string_built_sql(name):
    found = offences(BAD[name])
    assert len(found) == 1 and found[0].startswith("<snippet>:"), found


@pytest.mark.parametrize("name", GOOD)
def test_the_check_passes_parameterised_sql(name):
    assert offences(textwrap.dedent(GOOD[name])) == []
