"""HINT semantics: exact executors over parse trees with pluggable operator tables, and a fast
vectorised batch solver for hot loops."""

from neurosym.semantics.batch import BatchSolver, solve_batch
from neurosym.semantics.executor import BRACKET_VALUE, Execution, evaluate, execute
from neurosym.semantics.operators import Operator, Value
from neurosym.semantics.table import (
    FEWSHOT_NUMBERS,
    FEWSHOT_OPERATORS,
    HINT_FEWSHOT_SEMANTICS,
    HINT_SEMANTICS,
    RATIONAL_SEMANTICS,
    OperatorTable,
)
from neurosym.semantics.tree_semantics import Executor, TreeSemantics
from neurosym.syntax.concepts import ConceptTable

__all__ = [
    "Executor",
    "TreeSemantics",
    "BRACKET_VALUE",
    "BatchSolver",
    "ConceptTable",
    "Execution",
    "FEWSHOT_NUMBERS",
    "FEWSHOT_OPERATORS",
    "HINT_FEWSHOT_SEMANTICS",
    "HINT_SEMANTICS",
    "Operator",
    "OperatorTable",
    "RATIONAL_SEMANTICS",
    "Value",
    "evaluate",
    "execute",
    "solve_batch",
]
