"""skops' node tree, built from a skops file's schema.json exactly as `skops.io.load` builds it (skops 0.16).

Why its own module: which node a name belongs to is decided here, before anything is judged. skops builds every
node before it constructs any, in an order of its own (a reduce node's state before its arguments, a dict's key
types before its items), and an `__id__` names the first node built under it (skops' memo): every later node with
that id is replaced by it, its own content never built. A builder that took another order or memo would judge a
decoy and miss the node that runs (helper 228 hid an exec behind protocol 1's Generator, which builds no seed
sequence). Anything skops refuses, or this reading does not model, is `Unfollowed`: a finding, never a pass.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeGuard

PROTOCOLS = range(0, 3)  # the protocols skops 0.11 to 0.16 read (0 and 1 still have nodes of their own)
MAX_NODES = 5_000_000  # nodes in one schema (a random forest of 500 trees has a few tens of thousands)
MAX_NODE_DEPTH = 400  # nesting skops' recursive builder survives with room to spare; deeper is not followed
# The loaders skops 0.16 registers (NODE_TYPE_MAPPING, CachedNode included): each a method of Builder and Writer.
LOADERS = frozenset({
    "DictNode", "DefaultDictNode", "ListNode", "SetNode", "TupleNode", "BytesNode", "BytearrayNode", "SliceNode",
    "FunctionNode", "MethodNode", "PartialNode", "TypeNode", "ConstructorFromReduceNode", "ObjectNode", "JsonNode",
    "OperatorFuncNode", "NdArrayNode", "MaskedArrayNode", "DTypeNode", "RandomStateNode", "RandomGeneratorNode",
    "SparseMatrixNode", "TreeNode", "LossNode", "CachedNode",
    "SGDNode",  # skops 0.10 and older: LossNode's name then (0.16 refuses it; what older ones do is judged)
})
MemberReader = Callable[[str], bytes]  # a zip member's bytes by name; raises KeyError when there is none


class Unfollowed(Exception):
    """The schema cannot be followed: skops refuses it, or it does what this translation does not model."""

    def __init__(self, reason: str, path: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.path = path


def is_skops_schema(value: object) -> TypeGuard[dict[str, Any]]:
    """Whether a parsed schema.json is one some skops.io.load builds a tree from (others are refused at once).
    skops 0.4 and 0.5 never read a protocol, so one without it is a skops schema too (helper 229 ran os.system so)."""
    return isinstance(value, dict) and "__loader__" in value


@dataclass(eq=False)
class Node:
    """One node as skops builds it: its loader, the names it imports, and its child nodes by role."""

    loader: str
    module: str
    name: str
    state: dict[str, Any]
    path: str
    children: dict[str, Any] = field(default_factory=dict)  # Node, list[Node], dict[str, Node] or raw values


def _text(state: dict[str, Any], key: str, path: str) -> str:
    value = state.get(key)
    if not isinstance(value, str):
        raise Unfollowed(f"{key} is {type(value).__name__}, not text", path)
    return value


class Builder:
    """skops' get_tree: the node classes, the order they build their children in, and the memo of ids."""

    def __init__(self, protocol: int, read_member: MemberReader, check_time: Callable[[], None]) -> None:
        self.protocol = protocol
        self.read_member = read_member
        self.check_time = check_time
        self.memo: dict[Any, Node] = {}
        self.count = 0

    def build(self, state: Any, path: str, depth: int) -> Node:
        if not isinstance(state, dict):
            raise Unfollowed(f"a node is {type(state).__name__}, not an object", path)
        if depth > MAX_NODE_DEPTH:
            raise Unfollowed(f"nodes nest deeper than {MAX_NODE_DEPTH}", path)
        self.count += 1
        if self.count % 4096 == 0:
            self.check_time()
        if self.count > MAX_NODES:
            raise Unfollowed(f"more than {MAX_NODES} nodes", path)
        saved_id = state.get("__id__")
        try:
            if saved_id in self.memo:
                return self.memo[saved_id]
        except TypeError:
            raise Unfollowed(f"__id__ {saved_id!r} cannot be looked up", path) from None
        loader = _text(state, "__loader__", path)
        node = Node(loader, _text(state, "__module__", path), _text(state, "__class__", path), state, path)
        if loader != "CachedNode" and saved_id:
            self.memo[saved_id] = node  # Node.__init__ memoizes before it builds any child
        if loader not in LOADERS:
            raise Unfollowed(f"loader {loader!r} is not one skops has", path)
        getattr(self, f"_{loader}")(node, depth + 1)
        return node

    def _child(self, node: Node, role: str, state: Any, depth: int) -> Node:
        child = self.build(state, f"{node.path}.{role}", depth)
        node.children[role] = child
        return child

    def _items(self, node: Node, role: str, states: Any, depth: int) -> None:
        if not isinstance(states, list):
            raise Unfollowed(f"{role} is {type(states).__name__}, not a list", node.path)
        node.children[role] = [self.build(s, f"{node.path}.{role}[{i}]", depth) for i, s in enumerate(states)]

    def _fields(self, node: Node) -> dict[str, Any]:
        """A node's content that must be a JSON object (its fields by role), as skops indexes it."""
        content = self._content(node)
        if not isinstance(content, dict):
            raise Unfollowed(f"a {node.loader}'s content is not an object", node.path)
        return content

    def _roles(self, node: Node, content: dict[str, Any], roles: tuple[str, ...], depth: int) -> None:
        for role in roles:
            self._child(node, role, content.get(role), depth)

    def _content(self, node: Node) -> Any:
        if "content" not in node.state:
            raise Unfollowed("the node has no content", node.path)
        return node.state["content"]

    def _DictNode(self, node: Node, depth: int) -> None:
        self._child(node, "key_types", node.state.get("key_types"), depth)
        content = self._fields(node)
        node.children["content"] = {
            key: self.build(value, f"{node.path}.content[{key!r}]", depth) for key, value in content.items()
        }

    def _DefaultDictNode(self, node: Node, depth: int) -> None:
        self._roles(node, self._fields(node), ("main", "default_factory"), depth)

    def _ListNode(self, node: Node, depth: int) -> None:
        self._items(node, "content", self._content(node), depth)

    _SetNode = _ListNode
    _TupleNode = _ListNode

    def _FunctionNode(self, node: Node, depth: int) -> None:
        """Protocol 0 (and skops 0.4 and 0.5, whatever the protocol says) names the function in its content; a later
        skops takes __module__ and __class__. Whichever a file names in the other place is judged too ("also")."""
        content = node.state.get("content")
        named = isinstance(content, dict) and ("module_path" in content or "function" in content)
        if self.protocol == 0 or named:
            if not isinstance(content, dict):
                raise Unfollowed("a protocol 0 FunctionNode's content is not an object", node.path)
            old = (_text(content, "module_path", node.path), _text(content, "function", node.path))
            if self.protocol == 0:
                node.module, node.name = old
            else:
                node.children["also"] = old

    def _TypeNode(self, node: Node, depth: int) -> None:
        return None

    def _JsonNode(self, node: Node, depth: int) -> None:
        self._content(node)

    def _SliceNode(self, node: Node, depth: int) -> None:
        content = self._content(node)
        if not isinstance(content, dict) or not {"start", "stop", "step"} <= set(content):
            raise Unfollowed("a SliceNode's content lacks start, stop or step", node.path)

    def _PartialNode(self, node: Node, depth: int) -> None:
        self._roles(node, self._fields(node), ("func", "args", "kwds", "namespace"), depth)

    def _ConstructorFromReduceNode(self, node: Node, depth: int) -> None:
        self._child(node, "content", self._content(node), depth)

    def _ObjectNode(self, node: Node, depth: int) -> None:
        content = node.state.get("content")
        if content is not None:
            self._child(node, "attrs", content, depth)

    def _MethodNode(self, node: Node, depth: int) -> None:
        content = self._content(node)
        if not isinstance(content, dict) or "func" not in content:
            raise Unfollowed("a MethodNode's content lacks obj or func", node.path)
        owner = self._child(node, "obj", content.get("obj"), depth)
        if (owner.module, owner.name) != (node.module, node.name):
            raise Unfollowed("a MethodNode names another class than its object's", node.path)
        node.children["func"] = content["func"]

    def _OperatorFuncNode(self, node: Node, depth: int) -> None:
        if node.module != "operator":
            raise Unfollowed(f"an OperatorFuncNode names module {node.module!r}", node.path)
        self._child(node, "attrs", node.state.get("attrs"), depth)

    def _BytesNode(self, node: Node, depth: int) -> None:
        node.children["data"] = self._member(node)

    _BytearrayNode = _BytesNode

    def _member(self, node: Node) -> bytes:
        name = node.state.get("file")
        if not isinstance(name, str):
            raise Unfollowed("the node names no member file", node.path)
        try:
            return self.read_member(name)
        except KeyError:
            raise Unfollowed(f"member {name!r} is not in the archive", node.path) from None

    def _reduce(self, node: Node, depth: int) -> None:
        self._child(node, "attrs", self._content(node), depth)
        reduce = node.state.get("__reduce__")
        if not isinstance(reduce, dict):
            raise Unfollowed("__reduce__ is not an object", node.path)
        self._child(node, "args", reduce.get("args"), depth)

    _TreeNode = _reduce
    _LossNode = _reduce
    _SGDNode = _reduce

    def _NdArrayNode(self, node: Node, depth: int) -> None:
        kind = node.state.get("type")
        if kind == "numpy":
            node.children["data"] = self._member(node)
        elif kind == "json":
            self._items(node, "items", self._content(node), depth)
            self._child(node, "shape", node.state.get("shape"), depth)
        else:
            raise Unfollowed(f"array type {kind!r} is not one skops has", node.path)

    def _MaskedArrayNode(self, node: Node, depth: int) -> None:
        self._roles(node, self._fields(node), ("data", "mask"), depth)

    def _RandomStateNode(self, node: Node, depth: int) -> None:
        self._child(node, "content", self._content(node), depth)

    def _RandomGeneratorNode(self, node: Node, depth: int) -> None:
        """Protocol 0 kept the bit generator's state as a raw dict, which skops' audit refuses; protocol 1 builds
        the bit generator's state only (a seed_seq there is never built, so its ids never enter the memo)."""
        if self.protocol == 0:
            raise Unfollowed("a protocol 0 Generator, whose raw state skops refuses", node.path)
        roles = ("bit_generator", "seed_seq") if self.protocol >= 2 else ("bit_generator",)
        self._roles(node, self._fields(node), roles, depth)

    def _DTypeNode(self, node: Node, depth: int) -> None:
        self._child(node, "content", self._content(node), depth)

    def _SparseMatrixNode(self, node: Node, depth: int) -> None:
        if node.state.get("type") != "scipy":
            raise Unfollowed("a SparseMatrixNode not of type scipy", node.path)
        node.children["data"] = self._member(node)

    def _CachedNode(self, node: Node, depth: int) -> None:
        saved_id = node.state.get("__id__")
        try:
            cached = None if saved_id is None else self.memo.get(saved_id)
        except TypeError:
            cached = None
        if cached is None:
            raise Unfollowed(f"a CachedNode names id {saved_id!r}, which no earlier node has", node.path)
        node.children["cached"] = cached


def build_tree(
    schema: dict[str, Any], protocol: int, read_member: MemberReader, check_time: Callable[[], None]
) -> tuple[Node, int]:
    """The root node skops builds from `schema`, and how many nodes it built."""
    builder = Builder(protocol, read_member, check_time)
    return builder.build(schema, "$", 0), builder.count
