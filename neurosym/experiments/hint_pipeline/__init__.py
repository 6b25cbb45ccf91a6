"""The neuro-symbolic HINT pipeline (``neurosym hint --model neurosym``): its options and its two modes.

* ``--input image`` (:mod:`.image`): a symbol classifier trained from scratch with no symbol labels: each
  batch is read with grammar-constrained decoding and corrected by abduction (top-down back-search)
  towards the known results, on a curriculum from short to long expressions. What is given: the grammar,
  the precedence levels and HINT's operator table; what is learned from results: the perception.
* ``--input symbol`` (:mod:`.symbol`): the digits are known; the meanings of ``+ - * /`` are induced from
  results by program search.

Both then learn the few-shot concepts x, y (numbers), a, b, c, d (operators) from their few-shot training
sets (:mod:`.fewshot`), and time abduction on corrupted 7-symbol expressions. Generic options (``--data``,
``--bank``, ``--scale``, ``--seed``, ``--steps``, ``--batch-size``, ``--lr``, ``--cnn``, ``--device``,
``--out``, ``--resume``, ``--progress``, ``--threads``, ``--eval-batch-size``) come from
:mod:`neurosym.experiments.hint`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from neurosym.benchmarking.abduction_speed import abduction_speed
from neurosym.data.symbol_images import HINT_SYMBOLS
from neurosym.experiments.hint_options import HintOptions, RunSetup
from neurosym.experiments.hint_sources import load_hint_data
from neurosym.experiments.report import reporting_results
from neurosym.paths import user_path
from neurosym.perception.reader import Reader, reader_module
from neurosym.perception.routed import RoutedReader
from neurosym.perception.saved_reader import load_reader
from neurosym.perception.symbol_classifier import SymbolClassifier
from neurosym.pipelines.adapt import STAGE_CHECKPOINTS, check_adapted_reader
from neurosym.pipelines.concepts import concept_table
from neurosym.pipelines.pipeline import HintPipeline
from neurosym.pipelines.routing import writer_router
from neurosym.semantics import HINT_SEMANTICS
from neurosym.training import resolve_device
from neurosym.training.allocator import retain_freed_memory
from neurosym.training.checkpoint import (
    MAPPING,
    load_checkpoint,
    load_json,
    load_model_state,
    require_entries,
    require_kinds,
    save_json,
    weights_stamp,
)


def trained_hint_pipeline(
    run: str | os.PathLike, concept: str | None = None, scale: float | None = None, adapted: bool = False
) -> HintPipeline:
    """The pipeline that a finished ``neurosym hint --model neurosym --input image`` run trained (``run``: its
    ``--out`` folder): its reader from ``checkpoint.pt`` (rebuilt from the options the checkpoint keeps) with HINT's
    operator table, in evaluation mode, ready to read and predict windows ``[B, T, 32, 32]``
    (:meth:`~neurosym.pipelines.pipeline.HintPipeline.predict`): what its ``val`` and ``test`` results scored. With
    ``adapted``: the pipeline its ``--adapt`` left (:func:`_adapted`), what its ``adapt`` results scored and what its
    few-shot stage grew its concepts from. With ``concept`` (``"x"``, ``"a"``, ...): the pipeline its few-shot stage
    grew for that concept (the reader with the concept's class, the table with its meaning; grown from the adapted
    reader where the run adapted), learned at ``scale`` (needed only when the run learned it at several). An
    ``--ensemble`` run keeps no reader (its members' runs are read back one by one). ``ValueError`` names what is
    missing or does not fit."""
    run = _run_folder(run)
    if concept is None and scale is not None:
        raise ValueError(f"scale={scale!r} picks the few-shot scale of a concept: give the concept too, or no scale")
    if concept is not None:
        if adapted:
            raise ValueError("give a concept or adapted, not both: a run that adapted grew its concepts from the adapted one")
        return _trained_concept(run, concept, scale)
    checkpoint = run / "checkpoint.pt"
    saved = load_checkpoint(checkpoint)
    if saved is None:
        results = run / "results.json"
        if results.is_file() and (members := load_json(results).get("ensemble")):
            raise ValueError(
                f"{run} is a neurosym hint --ensemble run, which keeps no reader of its own: read back each of its "
                f"members' runs ({', '.join(members)}), or read them as one with "
                "neurosym.perception.ensemble.readers_from_checkpoints"
            )
        raise ValueError(f"{run} holds no checkpoint.pt: give the --out folder of a neurosym hint --model neurosym run")
    what = "a neurosym hint --model neurosym --input image run"
    require_entries(saved, ("model", "setup", "vocabulary"), checkpoint, what, advice="give its run's folder")
    require_kinds(saved, {"setup": MAPPING}, checkpoint, what)
    setup = saved["setup"]
    if (setup.get("model"), setup.get("input"), saved.get("vocabulary")) != ("neurosym", "image", list(HINT_SYMBOLS)):
        raise ValueError(
            f"{checkpoint} is not the reader of a neurosym hint --model neurosym --input image run with HINT's semantics"
        )
    reader = load_reader(checkpoint, _built_reader(setup, checkpoint, what))
    read_with: Reader = _adapted(run, reader, setup) if adapted else reader
    reader_module(read_with).eval()
    return HintPipeline(read_with, HINT_SEMANTICS, abduction_changes=setup["abduction_changes"])


def _run_folder(run: str | os.PathLike) -> Path:
    """``run`` as the path of an existing folder (a missing one, or a file such as its ``checkpoint.pt``, raises
    ``ValueError`` naming it: they were read as a run without checkpoint or concepts)."""
    folder = user_path(run)
    if not folder.is_dir():
        found = "is a file" if folder.exists() else "does not exist"
        raise ValueError(f"{folder} {found}: give the --out folder of a neurosym hint --model neurosym run")
    return folder


def _built_reader(setup: Mapping[str, Any], path: Path, what: str) -> SymbolClassifier:
    """A fresh reader built from ``setup``, what the checkpoint at ``path`` (of ``what``) keeps of the options of
    :data:`.image.READER_OPTIONS` (:func:`.image.hint_reader`); ``ValueError`` naming ``path`` and each it lacks."""
    from neurosym.experiments.hint_pipeline.image import READER_OPTIONS, hint_reader

    require_entries(setup, READER_OPTIONS, path, f"{what} (its setup)")
    return hint_reader(setup)


def _adapted(run: Path, trained: SymbolClassifier, setup: Mapping[str, Any]) -> Reader:
    """The reader of :func:`trained_hint_pipeline` with ``adapted``: ``trained`` (the run's, built from ``setup``) as
    the run's ``--adapt`` stages left it, as its ``results.json`` records them: the adapted reader
    (``adapt_checkpoint.pt``, which must have adapted ``trained``), refit (``refit_checkpoint.pt``) where the run refit
    it, routed with ``trained`` by the router of ``routing_checkpoint.pt`` where the run routed."""
    from neurosym.experiments.hint_pipeline.image import hint_reader

    results = run / "results.json"
    done = load_json(results).get("adapt") if results.is_file() else None
    if not done:
        raise ValueError(f"{run} holds no finished --adapt run ({results.name} records none): read it without adapted")
    check_adapted_reader(run, weights_stamp(trained))
    adapted = load_reader(run / STAGE_CHECKPOINTS["adapt"], hint_reader(setup))
    if done.get("refit_steps"):
        adapted = load_reader(run / STAGE_CHECKPOINTS["refit"], adapted)
    if not done.get("routing_steps"):
        return adapted
    return RoutedReader([trained, adapted], load_reader(run / STAGE_CHECKPOINTS["route"], writer_router(2, setup["cnn"])))


def _trained_concept(run: Path, concept: str, scale: float | None) -> HintPipeline:
    """:func:`trained_hint_pipeline` for a few-shot ``concept``: the model its :func:`.fewshot.concept_checkpoint` keeps."""
    from neurosym.experiments.hint_pipeline.fewshot import NOT_LEARNED, concept_checkpoint, program_from_saved

    progress = run / "fewshot_image.json"
    done = load_json(progress) if progress.is_file() else {}
    learned = {key: entry["concepts"] for key, entry in done.items() if key != "setup"}
    scales = [key for key, concepts in learned.items() if "val_accuracy" in concepts.get(concept, {})]
    if scale is not None:  # (by value: a scale of 1 was not the run's "1.0")
        scales = [key for key in scales if float(key) == float(scale)]
    if not scales:
        found = sorted({f"{c} at {key}" for key, concepts in learned.items() for c in concepts})
        listed = (
            f"{progress.name} lists {', '.join(found) if found else 'none'}"
            if progress.is_file()
            else f"it holds no {progress.name}: its few-shot stage did not run, as with --fewshot-scales none"
        )
        raise ValueError(f"{run} learned no few-shot concept {concept!r} from images{'' if scale is None else f' at scale {scale}'}"
                         f" ({listed})")  # fmt: skip
    if scale is None and len(scales) > 1:
        raise ValueError(f"{run} learned {concept!r} at the few-shot scales {', '.join(scales)}: give one as scale")
    key = scales[0]
    if str(outcome := learned[key][concept].get("learned", "")).startswith(NOT_LEARNED):  # (it kept no model)
        raise ValueError(f"{run} found no meaning of the few-shot concept {concept!r} at scale {key}: {outcome}")
    path = concept_checkpoint(run, "image", key, concept)
    saved = load_checkpoint(path)
    if saved is None:
        raise ValueError(f"{path} is missing: delete {progress} and run the same command again (it learns the concepts again)")
    require_entries(saved, ["setup", "model", "value", "level", "program"], path, "a few-shot concept")
    require_kinds(saved, {"setup": MAPPING}, path, "a few-shot concept")
    if saved.get("vocabulary") != [*HINT_SYMBOLS, concept]:
        raise ValueError(f"{path} is not a concept learned over HINT's semantics (a --semantics learned run's reader)")
    reader = _built_reader(saved["setup"], path, "a few-shot concept")
    reader.add_symbol(concept)
    load_model_state(reader, saved["model"], str(path), "reader")
    table = concept_table(HINT_SEMANTICS, concept, saved["value"], saved["level"], program_from_saved(saved["program"]))
    return HintPipeline(reader.eval(), table, abduction_changes=saved["setup"]["abduction_changes"])


def run(args: HintOptions) -> dict[str, Any]:
    out = Path(args.out)
    with reporting_results(out):
        results = _results(args, out)
    return results


def _results(args: HintOptions, out: Path) -> dict[str, Any]:
    """What :func:`run` writes in ``out`` (its ``results.json``), its stages' files and tables written as they end."""
    from neurosym.experiments.hint_pipeline.image import run_image
    from neurosym.experiments.hint_pipeline.learned import run_learned_image, run_learned_symbol
    from neurosym.experiments.hint_pipeline.symbol import run_symbol

    out.mkdir(parents=True, exist_ok=True)
    if resolve_device(args.device).type == "cpu":  # a batch's reader activations would page-fault every step
        retain_freed_memory(large_blocks=True)
    results: dict[str, Any] = {
        "input": args.input,
        "scale": args.scale,
        "test_scale": args.test_scale or args.scale,
        "seed": args.seed,
        "data_seed": args.data_seed_or_seed(),
    }
    run_setup = RunSetup(args)  # the data's stamps as the run starts, kept by each of its checkpoints
    if args.semantics == "learned":
        data = load_hint_data(args, args.input == "image", bool(args.fewshot_scales), args.test_scale, args.progress)
        results.update((run_learned_image if args.input == "image" else run_learned_symbol)(args, out, data, run_setup))
    else:
        results.update((run_image if args.input == "image" else run_symbol)(args, out, run_setup))
    results["abduction_speed"] = abduction_speed(args.speed_samples, args.seed)
    speed = results["abduction_speed"]
    print(
        f"\nabduction on wrong 7-symbol expressions: median {speed['median_ms']:.2f} ms, "
        f"90th percentile {speed['p90_ms']:.2f} ms, corrected {speed['corrected']:.1%} of {speed['samples']}"
    )
    save_json(results, out / "results.json")
    return results
