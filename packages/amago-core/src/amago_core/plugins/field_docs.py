"""Field docstrings -> field descriptions, with one parse per source file.

pydantic's ``use_attribute_docstrings`` re-parses the defining module's source for every model class;
config modules define many small classes and listing imports them all, so that cost showed up in the
CLI's start-up. Here each file is parsed once and every class in it is served from that parse.
"""

from __future__ import annotations

import ast
import functools
import inspect
import itertools
import linecache
import sys

from pydantic import Field
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined


@functools.lru_cache(maxsize=256)
def _class_nodes(filename: str) -> dict[str, ast.ClassDef]:
    source = "".join(linecache.getlines(filename))
    if not source:
        return {}
    try:
        tree = ast.parse(source, filename)
    except SyntaxError:
        return {}
    nodes: dict[str, ast.ClassDef] = {}

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                qualname = f"{prefix}{node.name}"
                nodes[qualname] = node
                visit(node.body, qualname + ".")
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                visit(node.body, f"{prefix}{node.name}.<locals>.")

    visit(tree.body, "")
    return nodes


def attribute_docstrings(cls: type) -> dict[str, str]:
    """``{field: docstring}`` for the string literals that directly follow annotated attributes in ``cls``."""
    module = sys.modules.get(cls.__module__)
    filename = getattr(module, "__file__", None)
    if not filename:
        return {}
    node = _class_nodes(filename).get(cls.__qualname__)
    if node is None:
        return {}
    docs: dict[str, str] = {}
    for statement, following in itertools.pairwise(node.body):
        if (
            isinstance(statement, ast.AnnAssign)
            and isinstance(statement.target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            docs[statement.target.id] = " ".join(following.value.value.split())
    return docs


def _is_class_var(annotation: object) -> bool:
    text = annotation if isinstance(annotation, str) else repr(annotation)
    return text.startswith(("ClassVar", "typing.ClassVar", "t.ClassVar"))


def attach_field_docstrings(cls: type) -> None:
    """Turns each documented attribute of ``cls`` into a field with that description.

    Runs from ``__init_subclass__``, before pydantic collects the fields, so the descriptions reach both
    ``model_fields`` and the JSON Schema. An explicit ``Field(description=...)`` wins over the docstring.
    """
    docs = attribute_docstrings(cls)
    annotations = inspect.get_annotations(cls)  # this class only, as pydantic collects per class
    for name, doc in docs.items():
        if name not in annotations or name.startswith("_") or _is_class_var(annotations[name]):
            continue
        default = cls.__dict__.get(name, PydanticUndefined)
        if isinstance(default, FieldInfo):
            if default.description:
                continue
            setattr(cls, name, FieldInfo.merge_field_infos(default, description=doc))
        else:
            setattr(cls, name, Field(default, description=doc))
