"""The HINT dataset (Li et al.): generator faithful to the release, its splits (main and few-shot), the
official file format, PyTorch datasets for symbol and image input, and Figure A2-style statistics."""

from neurosym.data.hint.build import (
    FEWSHOT_CONCEPTS,
    MAIN_VOCABULARY,
    SPLIT_NAMES,
    fewshot_rules,
    fewshot_split,
    fewshot_vocabulary,
    main_split,
)
from neurosym.data.hint.examples import HintRecord, HintSplit
from neurosym.data.hint.generate import generate_split
from neurosym.data.hint.official import (
    FEWSHOT_FILE,
    IMAGE_FOLDER,
    SPLIT_FILES,
    assign_images,
    check_release,
    read_fewshot,
    read_records,
    read_release,
    record_from_json,
    record_to_json,
    write_release,
)
from neurosym.data.hint.sampling import Vocabulary, enumerate_prefix, evaluate_prefix, prefix_shapes, sample_prefix
from neurosym.data.hint.splits import (
    EVAL_SUBSETS,
    FEWSHOT_NUMBER_RULES,
    FEWSHOT_OPERATOR_RULES,
    MAIN_RULES,
    SplitRules,
)
from neurosym.data.hint.stats import (
    ASPECTS,
    dependency_range,
    operator_count,
    split_statistics,
    symbol_kl_divergence,
    tree_depth,
)
from neurosym.data.hint.torch_data import (
    IGNORE_INDEX,
    PAD_ID,
    HintImageDataset,
    HintSymbolDataset,
    collate_hint,
    result_digits,
)

__all__ = [
    "ASPECTS",
    "EVAL_SUBSETS",
    "FEWSHOT_CONCEPTS",
    "FEWSHOT_FILE",
    "FEWSHOT_NUMBER_RULES",
    "FEWSHOT_OPERATOR_RULES",
    "HintImageDataset",
    "HintRecord",
    "HintSplit",
    "HintSymbolDataset",
    "IGNORE_INDEX",
    "IMAGE_FOLDER",
    "MAIN_RULES",
    "MAIN_VOCABULARY",
    "PAD_ID",
    "SPLIT_FILES",
    "SPLIT_NAMES",
    "SplitRules",
    "Vocabulary",
    "assign_images",
    "check_release",
    "collate_hint",
    "dependency_range",
    "enumerate_prefix",
    "evaluate_prefix",
    "fewshot_rules",
    "fewshot_split",
    "fewshot_vocabulary",
    "generate_split",
    "main_split",
    "operator_count",
    "prefix_shapes",
    "read_fewshot",
    "read_records",
    "read_release",
    "record_from_json",
    "record_to_json",
    "result_digits",
    "sample_prefix",
    "split_statistics",
    "symbol_kl_divergence",
    "tree_depth",
    "write_release",
]
