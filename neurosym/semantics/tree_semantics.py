"""A user's semantics over a :class:`~neurosym.syntax.symbol_grammar.SymbolGrammar`'s parse trees.

:class:`TreeSemantics` computes a parse tree's value bottom-up from one callable per rule (a Lark
``Transformer`` or a mapping ``rule -> f(children values)``; a terminal's value is its symbol unless a
callable is named after the terminal), and optionally knows *inverses* per rule for top-down abduction:
``inverse(wanted, children_values)`` yields tuples of children values that give ``wanted``. A value is
*invalid* (``None``) when a callable returns ``None`` or raises an arithmetic or value error (division by
zero, a negative square root, ...); an inverse that raises one offers no (more) tuples. ``int(text)`` and
``str(value)`` raise one beyond 4,300 digits: :mod:`~neurosym.semantics.numerals` converts numerals of any length.
:class:`Executor` runs the grammar and the semantics over many sentences at once, remembering sentences it has seen.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lark import Discard, Token, Transformer, Tree
from lark.exceptions import VisitError
from lark.tree import Meta

from neurosym.semantics.operators import INVALID
from neurosym.syntax.errors import ParseError
from neurosym.syntax.symbol_grammar import SymbolGrammar, check_sentence, symbol_token
from neurosym.training.checks import int_at_least

Inverse = Callable[[Any, tuple[Any, ...]], Iterable[Sequence[Any]]]


class TreeSemantics:
    """What a parse tree means, and optionally how to push a wanted value back down it.

    Args:
        rules: a Lark ``Transformer`` (its methods named after rules, aliases or terminals, ``v_args`` as Lark
            applies it, and its own ``__default__`` / ``__default_token__`` for the names without one; as in Lark, no
            terminal callback where it was made with ``visit_tokens=False``), or a mapping from those names to
            callables; a rule callable takes the list of its children's values, a terminal callable the symbol
            (``str``; a Transformer's, as in Lark, its token, placed at the symbol's position in the sentence:
            ``start_pos``, ``column``, on line 1; where abduction asks which symbols of a terminal give a value, placed
            nowhere, so a terminal's value is best one of its symbol alone). A rule without a callable and with one
            child passes its child's value up; with none or several it is an error (named at evaluation; a
            :class:`~neurosym.pipelines.grammar_pipeline.GrammarPipeline` refuses such semantics as it is built), as is a
            Transformer's callback that returns Lark's ``Discard`` (leave the node out of the tree in the grammar).
        inverses: per rule name, ``f(wanted, children_values) -> iterable of children-value tuples`` whose
            evaluation gives ``wanted`` (each tuple as long as ``children_values``; a child kept as it is
            repeats its current value). An inverse that raises an arithmetic or value error (``wanted / 0``) offers
            nothing more, as a rule's callable that raises one gives an invalid value (:meth:`preimages`). An error of
            another kind that a callable or an inverse raises is raised with a note (``add_note``) naming the rule (or
            the terminal and its position), what it was given and, executing a sentence, the sentence.

    Semantics pickle (where their rules and inverses do) and copy as their rules and inverses; the callables they
    have looked up are looked up again by the copy, so a deep copy runs its own Transformer.
    """

    def __init__(self, rules: Transformer | Mapping[str, Callable], inverses: Mapping[str, Inverse] | None = None):
        if isinstance(rules, type) and issubclass(rules, Transformer):  # (named "got ABCMeta")
            raise TypeError(f"TreeSemantics takes a Lark Transformer, got the class {rules.__name__}: give an instance")
        if not isinstance(rules, Transformer | Mapping):
            raise TypeError(f"TreeSemantics takes a Lark Transformer or a mapping rule -> callable, got {type(rules).__name__}")
        if inverses is not None and not isinstance(inverses, Mapping):
            raise TypeError(f"inverses must be a mapping rule -> inverse callable, got {type(inverses).__name__}")
        # (a rule of 5 was taken, and failed in training as "'int' object is not callable"; a Transformer's methods are
        # looked up by Lark's own rules at evaluation)
        for what, table in (
            ("rule {!r}", rules if isinstance(rules, Mapping) else {}),
            ("the inverse of rule {!r}", inverses or {}),
        ):
            for name, function in table.items():
                if not isinstance(name, str):
                    raise TypeError(f"rules and inverses are keyed by names (strings), got {type(name).__name__} {name!r}")
                if not callable(function):
                    raise TypeError(f"{what.format(name)} must be callable, got {type(function).__name__} {function!r:.40}")
        self.rules = rules
        self._transformer = rules if isinstance(rules, Transformer) else None  # (an ABC's isinstance is slow per leaf)
        self.inverses = dict(inverses or {})
        self._callables: dict[str, Callable | None] = {}

    def __getstate__(self) -> dict[str, Any]:
        """Pickled and copied without the callables looked up (:meth:`callable_of`), looked up again by the copy: a
        Transformer's are closures over it, which do not pickle, and a deep copy's would call the original Transformer."""
        return {**self.__dict__, "_callables": {}}

    @property
    def names(self) -> set[str]:
        """The rule, alias and terminal names the semantics give a callable or an inverse for: a mapping's keys or a
        Transformer's public methods (those of Lark's own classes aside: Lark dispatches on the others by name), and
        the inverses' keys."""
        return set(self.inverses) | _named_callables(self.rules)

    def callable_of(self, name: str) -> Callable | None:
        """The callable of rule or terminal ``name`` (``None`` when the semantics give none), looked up once; a
        Transformer's terminal callback takes the symbol or, placed where it stands, its token (:meth:`leaf_function`)."""
        if name not in self._callables:
            self._callables[name] = self._look_up(name)
        return self._callables[name]

    def _look_up(self, name: str) -> Callable | None:
        if isinstance(self.rules, Transformer):
            transformer, terminal = self.rules, name.isupper()
            if terminal and not transformer.__visit_tokens__:
                return None  # (Lark calls no terminal callback of a Transformer made with visit_tokens=False)
            fallback = "__default_token__" if terminal else "__default__"
            if not hasattr(transformer, name) and getattr(type(transformer), fallback) is getattr(Transformer, fallback):
                return None  # (Lark's own fallbacks keep a token, or build a tree: no value)
            if terminal:  # a terminal callback: Lark passes the token
                return _unwrapped(lambda symbol: transformer._call_userfunc_token(_token_of(name, symbol)), name)
            return _transformer_rule(transformer, name, None)
        return self.rules.get(name)

    def leaf_function(self, terminal: str, position: int | None) -> Callable[[str], Any] | None:
        """The callable of ``terminal`` (``None`` when the semantics give none), taking a symbol read at ``position`` of
        a sentence: a Transformer's terminal callback is given the token placed there (``start_pos``, ``column``), as
        Lark gives it (``position`` ``None``: a token placed nowhere); a mapping's callable takes the symbol alone."""
        function = self.callable_of(terminal)
        if function is None or position is None or self._transformer is None:
            return function
        call = self._transformer._call_userfunc_token
        return _unwrapped(lambda symbol: call(symbol_token(terminal, symbol, position)), terminal)

    def preimages(self, rule: str, wanted: Any, children: tuple[Any, ...]) -> Iterator[tuple[Any, ...]]:
        """The children-value tuples the inverse of ``rule`` offers for ``wanted`` given the ``children`` values read,
        each as a tuple; none from where the inverse raises an arithmetic or value error
        (:data:`~neurosym.semantics.operators.INVALID`).

        Raises:
            KeyError: ``rule`` has no inverse.
            TypeError: the inverse returns something that is not an iterable, or offers an item that is not one.
            ValueError: an offered tuple is not as long as ``children``.
        """
        inverse = self.inverses[rule]
        try:
            offered = inverse(wanted, children)
        except INVALID:
            return
        except Exception as error:
            error.add_note(_inverse_note(rule, wanted, children))
            raise
        if not isinstance(offered, Iterable):
            raise TypeError(
                f"the inverse of rule {rule!r} must return an iterable of children-value tuples, returned "
                f"{type(offered).__name__} {offered!r:.40} for {wanted!r:.40}"
            )
        items = iter(offered)
        while True:
            try:
                item = next(items)
            except (StopIteration, *INVALID):  # (a generator may raise as it offers)
                return
            except Exception as error:
                error.add_note(_inverse_note(rule, wanted, children))
                raise
            yield _children_values(rule, wanted, item, len(children))

    def leaf_value(self, terminal: str, symbol: str, position: int | None = None) -> Any:
        """The value of ``symbol`` read as ``terminal`` at ``position`` of a sentence (``None``: at no position; a
        Transformer's terminal callback then gets a token without one, :meth:`leaf_function`)."""
        function = self.leaf_function(terminal, position)
        return symbol if function is None else function(symbol)

    def _token_value(self, token: Token, replaced: Mapping[int, str]) -> Any:
        """The value of ``token``, a leaf of a parse tree, read as the symbol ``replaced`` gives at its position where
        it gives one; a Transformer's terminal callback is given the token itself, placed where it stands."""
        if token.start_pos is not None and token.start_pos in replaced:
            token = token.update(value=replaced[token.start_pos])
        function = self.callable_of(token.type)
        if function is None:
            return str(token)
        return function(str(token) if self._transformer is None else token)

    def node_values(self, tree: Tree | Token, replaced: Mapping[int, str] | None = None) -> dict[int, Any] | None:
        """The value of every subtree and token (keyed by ``id``), or ``None`` when the sentence is invalid; the
        symbols at the positions of ``replaced`` (position -> symbol) read as the symbols it gives instead.

        Raises:
            TypeError: ``tree`` is no Lark ``Tree`` or ``Token`` (:func:`postorder`), or ``replaced`` no mapping (a list
                of symbols was silently ignored).
        """
        values: dict[int, Any] = {}
        if replaced is not None and not isinstance(replaced, Mapping):
            raise TypeError(f"replaced must be a mapping position -> symbol, got {type(replaced).__name__} {replaced!r:.40}")
        replaced, nodes = replaced or {}, postorder(tree)
        try:
            for node in nodes:
                if isinstance(node, Token):
                    value = self._token_value(node, replaced)
                else:
                    children = [values[id(child)] for child in node.children]
                    function = self._rule_callable(node)
                    value = children[0] if function is None else function(children)
                if value is None:  # an invalid part makes the whole invalid
                    return None
                values[id(node)] = value
        except INVALID:
            return None
        except Exception as error:
            error.add_note(_semantics_note(node, [values[id(child)] for child in getattr(node, "children", ())]))
            raise
        return values

    def evaluate(self, tree: Tree | Token, replaced: Mapping[int, str] | None = None) -> Any:
        """The tree's value (``None`` when invalid), with the symbols of ``replaced`` as in :meth:`node_values`."""
        values = self.node_values(tree, replaced)
        return None if values is None else values[id(tree)]

    def compile(self, tree: Tree | Token) -> Callable[[str], Any]:
        """A function of a sentence with ``tree``'s terminals that gives its value (``None`` when invalid): the tree's
        nodes in post-order with their callables looked up once, each token reading the sentence's symbol at its
        position, so that many sentences of one shape are evaluated without walking a tree."""
        steps: list[tuple[int, Callable | None, tuple[int, ...] | None]] = []  # (position, callable, children)
        step_of: dict[int, int] = {}  # id(node) -> its step
        nodes = postorder(tree)
        for node in nodes:
            if isinstance(node, Token):
                if node.start_pos is None:
                    raise ValueError(f"token {str(node)!r} has no position: compile takes trees a SymbolGrammar parsed")
                steps.append((node.start_pos, self.leaf_function(node.type, node.start_pos), None))
            else:
                children = tuple(step_of[id(child)] for child in node.children)
                steps.append((-1, self._rule_callable(node), children))
            step_of[id(node)] = len(steps) - 1

        def run(sentence: str) -> Any:
            values: list[Any] = []
            try:
                for position, function, children in steps:
                    if children is None:
                        value = sentence[position] if function is None else function(sentence[position])
                    elif function is None:
                        value = values[children[0]]
                    else:
                        value = function([values[child] for child in children])
                    if value is None:  # an invalid part makes the whole invalid
                        return None
                    values.append(value)
            except INVALID:
                return None
            except Exception as error:  # (the step under way is the one after the values computed)
                failed, children = nodes[len(values)], steps[len(values)][2] or ()
                error.add_note(f"{_semantics_note(failed, [values[c] for c in children])}, reading the sentence {sentence!r:.80}")
                raise
            return values[-1]

        return run

    def _rule_callable(self, node: Tree) -> Callable | None:
        """The callable of ``node``'s rule; ``None`` for a rule without one that passes its one child's value up. A
        Transformer's is given ``node``'s meta, as Lark gives it (``v_args(meta=True)``, ``__default__``)."""
        function = self.callable_of(str(node.data))
        if function is None and len(node.children) != 1:
            raise TypeError(f"the semantics give no callable for rule {str(node.data)!r} ({len(node.children)} children)")
        if function is not None and isinstance(self.rules, Transformer):
            return _transformer_rule(self.rules, str(node.data), node.meta)
        return function


def _semantics_note(node: Tree | Token, children: list[Any]) -> str:
    """What a note on an error a callable of the semantics raised at ``node`` says: whose callable it was, and where it
    stands (a token) or what it was given (a rule node's ``children`` values)."""
    if isinstance(node, Token):
        return f"raised by the semantics of terminal {node.type!r} at position {node.start_pos}"
    return f"raised by the semantics of rule {str(node.data)!r} on the children values {children!r:.80}"


def _inverse_note(rule: str, wanted: Any, children: tuple[Any, ...]) -> str:
    """What a note on an error the inverse of ``rule`` raised says."""
    return f"raised by the inverse of rule {rule!r} for the value wanted {wanted!r:.40} and the children values {children!r:.80}"


def postorder(tree: Tree | Token) -> list[Tree | Token]:
    """Every subtree and token of ``tree``, each after its children (tokens left to right); iterative, so trees of any
    depth are walked (Lark's own walks, such as ``scan_values``, recurse). ``TypeError`` unless ``tree`` is a Lark
    ``Tree`` or ``Token`` (a sentence given for its tree failed on a missing ``children``)."""
    if not isinstance(tree, Tree | Token):
        raise TypeError(
            f"expected a parse tree (a Lark Tree or Token: SymbolGrammar.parse(sentence)), got {type(tree).__name__} {tree!r:.40}"
        )
    order: list[Tree | Token] = []
    stack: list[tuple[Tree | Token, bool]] = [(tree, False)]
    while stack:
        node, children_done = stack.pop()
        if children_done or isinstance(node, Token):
            order.append(node)
        else:
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(node.children))
    return order


def leaves(tree: Tree | Token) -> list[Token]:
    """The tokens of ``tree``, left to right (a token is its own leaf)."""
    return [node for node in postorder(tree) if isinstance(node, Token)]


def _children_values(rule: str, wanted: Any, item: Any, count: int) -> tuple[Any, ...]:
    """``item``, one answer of the inverse of ``rule`` for ``wanted``, as a tuple of ``count`` children values: a tuple
    or list (a str would offer its characters, a dict its keys, a set them in no order)."""
    if not isinstance(item, tuple | list):
        raise TypeError(
            f"the inverse of rule {rule!r} must offer tuples of children values, offered {type(item).__name__} "
            f"{item!r:.40} for {wanted!r:.40}"
        )
    values = tuple(item)
    if len(values) != count:
        raise ValueError(
            f"the inverse of rule {rule!r} offered {len(values)} children values {values!r:.60} for {wanted!r:.40}; "
            f"the rule's node has {count} children"
        )
    return values


def _named_callables(rules: Transformer | Mapping[str, Callable]) -> set[str]:
    """The names ``rules`` give a callable for: a mapping's keys, or a Transformer's callable attributes whose names
    do not start with ``_`` and that none of Lark's own classes it derives from defines (``transform``)."""
    if isinstance(rules, Mapping):
        return set(rules)
    lark_own = {name for kind in type(rules).__mro__ if kind.__module__.split(".")[0] == "lark" for name in vars(kind)}
    return {name for name in dir(rules) if not name.startswith("_") and name not in lark_own and callable(getattr(rules, name))}


def _transformer_rule(transformer: Transformer, name: str, meta: Meta | None) -> Callable[[list], Any]:
    """The callback of rule ``name`` as Lark calls it: on a node of that name, the children's values and ``meta``
    (``None``: an empty one)."""
    return _unwrapped(lambda children: transformer._call_userfunc(Tree(name, children, meta), children), name)


def _token_of(terminal: str, symbol: str) -> Token:
    """``symbol`` where it is already a token (placed where it stands), else its token of ``terminal``, placed nowhere."""
    return symbol if isinstance(symbol, Token) else symbol_token(terminal, symbol, None)


def _unwrapped(function: Callable[[Any], Any], name: str) -> Callable[[Any], Any]:
    """``function``, the callback of ``name``, raising what a Lark callback raised, not Lark's ``VisitError`` around
    it; ``TypeError`` where it returns Lark's ``Discard``, which would stand among its parent's children (Lark leaves it
    out of them, where an inverse's tuples would then be one value short of the parse tree's children)."""

    def call(argument: Any) -> Any:
        try:
            value = function(argument)
        except VisitError as error:
            raise error.orig_exc from None
        if value is Discard:
            raise TypeError(
                f"the Transformer's callback of {name!r} returned lark's Discard: every node of a parse tree takes part in "
                "its parent's value here; leave it out of the tree in the grammar instead (a terminal named _SEP or "
                'written anonymously, ",", a rule named _rule)'
            )
        return value

    return call


@dataclass
class _Parse:
    """A remembered parse of one terminal sequence: its ``tree`` (``None``: ungrammatical), the ``sentence`` it was
    parsed from, and its compiled ``program`` once a sentence of that shape has been run."""

    tree: Tree | Token | None
    sentence: str
    program: Callable[[str], Any] | None = None


class Executor:
    """Values of sentences under a grammar and its semantics, batched, with a bounded memory of sentences already
    run (abduction executes the same candidates again and again) and of ``shapes`` parses: parsing sees only the
    terminals, so a sentence whose terminals are those of one parsed before has that parse with its own symbols
    (or is ungrammatical as that one was), and is evaluated without parsing, by the parse's compiled program
    (:meth:`TreeSemantics.compile`)."""

    def __init__(self, grammar: SymbolGrammar, semantics: TreeSemantics, memory: int = 100_000, shapes: int = 10_000):
        if not isinstance(grammar, SymbolGrammar) or not isinstance(semantics, TreeSemantics):
            raise TypeError(f"Executor takes a SymbolGrammar and a TreeSemantics, got {type(grammar).__name__} and "
                            f"{type(semantics).__name__}")  # fmt: skip
        int_at_least(memory, "memory (sentences remembered)", 0)  # (-1 turned the memory off silently)
        int_at_least(shapes, "shapes (parses remembered)", 0)
        self.grammar, self.semantics, self.memory, self.shapes = grammar, semantics, memory, shapes
        self._seen: OrderedDict[str, Any] = OrderedDict()
        self._parses: OrderedDict[tuple[str | None, ...], _Parse] = OrderedDict()

    def __getstate__(self) -> dict[str, Any]:
        """Pickled and copied without the sentences and parses it remembers, which the copy remembers anew: their
        compiled programs are closures, which do not pickle (a pipeline that had read failed to)."""
        return {**self.__dict__, "_seen": OrderedDict(), "_parses": OrderedDict()}

    def value(self, sentence: str) -> Any:
        """The value of ``sentence`` (``None`` when ungrammatical or invalid; ``TypeError`` for no str, a list of
        symbols among them: :func:`~neurosym.syntax.symbol_grammar.check_sentence`)."""
        check_sentence(sentence)
        if sentence in self._seen:
            self._seen.move_to_end(sentence)
            return self._seen[sentence]
        value = self._run(sentence)
        self._seen[sentence] = value
        if len(self._seen) > self.memory:
            self._seen.popitem(last=False)
        return value

    def _run(self, sentence: str) -> Any:
        parse = self._shape_parse(sentence)
        if parse.tree is None:
            return None
        if parse.program is None:  # compiled when first run (a tree alone may be asked of partial semantics)
            parse.program = self.semantics.compile(parse.tree)
        return parse.program(sentence)

    def tree(self, sentence: str) -> Tree | Token | None:
        """The parse tree of ``sentence`` (``None`` when ungrammatical; a ``Token`` when the grammar inlines the whole
        sentence into one symbol): a remembered parse of its terminals, rebuilt with its own symbols where it was parsed
        for another sentence."""
        parse = self._shape_parse(sentence)
        return parse.tree if parse.tree is None or parse.sentence == sentence else _with_symbols(parse.tree, sentence)

    def _shape_parse(self, sentence: str) -> _Parse:
        """The parse remembered for ``sentence``'s terminals."""
        shape = self.grammar.terminals(sentence)
        if shape in self._parses:
            self._parses.move_to_end(shape)
            return self._parses[shape]
        try:
            tree = self.grammar.parse(sentence)
        except ParseError:
            tree = None
        self._parses[shape] = parse = _Parse(tree, sentence)
        if len(self._parses) > self.shapes:
            self._parses.popitem(last=False)
        return parse

    def values(self, sentences: Iterable[str]) -> list[Any]:
        """Values of many sentences (``None`` where ungrammatical or invalid); ``TypeError`` for one string (each of its
        symbols was read as a sentence), for sentences that are no iterable (``None`` failed as "'NoneType' object is
        not iterable") and for a sentence that is no str."""
        if isinstance(sentences, str):
            raise TypeError("values takes many sentences, not one string (value takes one)")
        if not isinstance(sentences, Iterable):
            raise TypeError(f"values takes an iterable of sentences (str), got {type(sentences).__name__} {sentences!r:.40}")
        return [self.value(sentence) for sentence in sentences]


def _with_symbols(tree: Tree | Token, sentence: str) -> Tree | Token:
    """``tree`` with each token's symbol that of ``sentence`` at the token's position (same terminals)."""
    built: dict[int, Tree | Token] = {}
    for node in postorder(tree):
        if isinstance(node, Token):
            assert node.start_pos is not None  # the grammar's SymbolLexer places every token
            built[id(node)] = node.update(value=sentence[node.start_pos])
        else:
            built[id(node)] = Tree(node.data, [built[id(child)] for child in node.children], node.meta)
    return built[id(tree)]
