"""A nested state as files of data: reading it never runs code.

A tree of dicts, lists and tuples whose leaves are torch tensors, NumPy arrays, numbers,
booleans, strings or None is written as ``<stem>.safetensors`` (every tensor and array,
keyed by its path in the tree) and ``<stem>.json`` (the structure, with the other
leaves). Reading parses JSON and safetensors only, so a file someone sent you (a frozen
opponent's networks) cannot execute anything, unlike a pickle.
"""

import json
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file, save_file

TENSORS, STRUCTURE = ".safetensors", ".json"


def tree_files(stem: Path) -> tuple[Path, Path]:
    return stem.with_name(stem.name + TENSORS), stem.with_name(stem.name + STRUCTURE)


def write_tree(stem: Path, tree: Any) -> tuple[Path, Path]:
    """Writes ``tree`` as ``<stem>.safetensors`` and ``<stem>.json``; returns both paths."""
    tensors: dict[str, torch.Tensor] = {}

    def encode(node: Any, path: str) -> Any:
        if isinstance(node, torch.Tensor):
            tensors[path] = node.detach().cpu().contiguous()
            return {"__tensor__": path}
        if isinstance(node, np.ndarray):
            tensors[path] = torch.from_numpy(np.ascontiguousarray(node))
            return {"__array__": path}
        if isinstance(node, np.generic):
            return node.item()
        if isinstance(node, dict):
            if all(isinstance(k, str) for k in node):
                return {"__dict__": {k: encode(v, f"{path}/{k}") for k, v in node.items()}}
            return {"__pairs__": [[encode(k, f"{path}/key{i}"), encode(v, f"{path}/{i}")] for i, (k, v) in enumerate(node.items())]}
        if isinstance(node, (list, tuple)):
            items = [encode(v, f"{path}/{i}") for i, v in enumerate(node)]
            return {"__tuple__": items} if isinstance(node, tuple) else items
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        raise TypeError(f"{path or 'the tree'}: a {type(node).__name__} cannot be written as data")

    structure = encode(tree, "")
    tensor_file, structure_file = tree_files(stem)
    save_file(tensors, str(tensor_file))
    structure_file.write_text(json.dumps(structure))
    return tensor_file, structure_file


def read_tree(stem: Path) -> Any:
    """The tree ``write_tree`` wrote (tensors on the CPU, arrays as NumPy)."""
    tensor_file, structure_file = tree_files(stem)
    tensors = load_file(str(tensor_file))

    def decode(node: Any) -> Any:
        if isinstance(node, list):
            return [decode(v) for v in node]
        if not isinstance(node, dict):
            return node
        if "__tensor__" in node:
            return tensors[node["__tensor__"]]
        if "__array__" in node:
            return tensors[node["__array__"]].numpy()
        if "__tuple__" in node:
            return tuple(decode(v) for v in node["__tuple__"])
        if "__pairs__" in node:
            return {decode(k): decode(v) for k, v in node["__pairs__"]}
        return {k: decode(v) for k, v in node["__dict__"].items()}

    return decode(json.loads(structure_file.read_text()))
