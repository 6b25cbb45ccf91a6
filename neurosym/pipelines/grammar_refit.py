"""Labelling a grammar pipeline's training windows by abduction, to refit a reader to them.

Once a reader learned from results reads most symbols right, each training example's best correction towards
its known result (:meth:`GrammarPipeline.abduce`) is right nearly everywhere: at MNIST-add N = 100 a reader
that reads 99.4 % of the validation digits gets 99.99 % of the 55,000 training digits labelled right, since a sum
pins its digits down. :func:`abduced_sentence_windows` takes those labels once; a fresh reader is then fitted to
them by plain classification over large batches of windows drawn from every example at once
(:func:`~neurosym.pipelines.refit.refit_reader`), free of the label noise the reader learned through while it
was still wrong. No symbol label is used: the labels come from the reader and the results.
"""

from __future__ import annotations

import torch

from neurosym.pipelines.grammar_pipeline import GrammarPipeline, check_target_kinds
from neurosym.pipelines.refit import LabelledWindows
from neurosym.pipelines.sentences import READ, SentenceSource
from neurosym.pipelines.windows import reading_batches, real_positions
from neurosym.training.device import mixed_precision


def abduced_sentence_windows(
    pipeline: GrammarPipeline, source: SentenceSource, device: torch.device, batch_size: int = 16
) -> LabelledWindows:
    """Every read window of ``source``'s examples (``[N, H, W]``) labelled with the symbol of ``pipeline``'s most
    probable correction towards the example's result (its reading, where that gives the result), as an index into
    ``pipeline.reader.vocabulary``; examples abduction cannot explain are left out. ``truths`` are the source's
    true symbols at the same windows, where it has them. The reader reads in evaluation mode
    (:meth:`GrammarPipeline.read` without gradients) and keeps its own mode."""
    if len(source) == 0:
        raise ValueError("abduced_sentence_windows needs at least one example")
    check_target_kinds(pipeline, source.targets)  # (a tensor target was named without its example)
    vocabulary = {symbol: index for index, symbol in enumerate(pipeline.reader.vocabulary)}
    known = getattr(source, "truths", None)
    if isinstance(pipeline.reader, torch.nn.Module):
        pipeline.reader.to(device)
    windows, labels, truths, left_out = [], [], [], 0
    for indices in reading_batches(source.lengths, batch_size):
        indices = indices.tolist()
        batch = source.batch(indices)
        with torch.no_grad(), mixed_precision(device):
            reading = pipeline.read(batch.to(device))
        found = pipeline.abduce(reading, [source.targets[i] for i in indices], batch.given)
        read = real_positions(batch.lengths, batch.given.shape[1]) & (batch.given == READ)  # [B, T]
        for row, (index, correction) in enumerate(zip(indices, found)):
            if correction is None:
                left_out += 1
                continue
            positions = read[row, : len(correction.sentence)].nonzero().flatten().tolist()
            windows.append(batch.windows[row, positions])
            labels += [vocabulary[correction.sentence[p]] for p in positions]
            if known is not None:
                truths += [vocabulary.get(known[index][p], -1) for p in positions]
    if not windows:
        raise ValueError("abduction explained none of the examples: there is nothing to refit a reader to")
    return LabelledWindows(
        torch.cat(windows), torch.tensor(labels, dtype=torch.long), len(source) - left_out, left_out,
        None if known is None else torch.tensor(truths, dtype=torch.long),
    )  # fmt: skip
