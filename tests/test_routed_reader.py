"""Readers routed by writer: the mixture each window or expression is read with, batch independence, bad input."""

import pytest
import torch
from hint_pipelines import tiny_pipeline, tiny_problem
from hypothesis import given, settings
from hypothesis import strategies as st
from test_reader_ensemble import OneArgument, RulingOut

from neurosym.data.symbol_images import HINT_SYMBOLS, SymbolBank
from neurosym.perception.routed import RoutedReader
from neurosym.perception.symbol_classifier import SymbolClassifier
from neurosym.pipelines.pipeline import HintPipeline
from neurosym.pipelines.refit import RefitConfig
from neurosym.pipelines.routing import route_readers
from neurosym.pipelines.windows import WindowSource, stack_windows
from neurosym.training import load_checkpoint


def _reader(seed: int, vocabulary=tuple(HINT_SYMBOLS)) -> SymbolClassifier:
    torch.manual_seed(seed)
    return SymbolClassifier(list(vocabulary), features=16, width=4).eval()


class InkRouter(torch.nn.Module):
    """Routes by how much ink a window holds: its weights vary from window to window."""

    def __init__(self, threshold: float):
        super().__init__()
        self.vocabulary, self.threshold = ["first", "new"], threshold

    def forward(self, windows: torch.Tensor) -> torch.Tensor:
        ink = windows.float().mean(dim=(-2, -1)).flatten() / 255.0 - self.threshold
        return torch.stack([ink, -ink], dim=-1).mul(40.0).log_softmax(dim=-1)


def _routed(bias: tuple[float, float] | None = None, threshold: float = 0.5) -> RoutedReader:
    if bias is None:
        return RoutedReader([_reader(0), _reader(1)], InkRouter(threshold)).eval()
    router = _reader(2, ("first", "new"))
    with torch.no_grad():  # a router that says the same whatever it sees
        router.classifier.weight.zero_()
        router.classifier.bias.copy_(torch.tensor(bias))
    return RoutedReader([_reader(0), _reader(1)], router).eval()


WINDOWS = torch.randint(0, 256, (12, 32, 32), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))


def test_a_certain_router_reads_with_the_reader_it_names():
    for bias, chosen in (((30.0, -30.0), 0), ((-30.0, 30.0), 1)):
        routed = _routed(bias)
        with torch.no_grad():
            assert torch.allclose(routed(WINDOWS), routed.readers[chosen](WINDOWS), atol=1e-5)


def test_each_window_is_read_with_the_mixture_its_router_weights_give():
    routed = _routed()
    with torch.no_grad():
        weights = routed.router(WINDOWS).exp()  # [N, 2]
        mixture = sum(weights[:, k : k + 1] * routed.readers[k](WINDOWS).exp() for k in range(2))
        assert torch.allclose(routed(WINDOWS), mixture.log(), atol=1e-5)
        assert torch.allclose(routed(WINDOWS).exp().sum(-1), torch.ones(len(WINDOWS)), atol=1e-5)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=len(WINDOWS), max_size=len(WINDOWS)))
def test_a_groups_windows_share_the_renormalised_mean_of_their_routing(labels):
    routed, groups = _routed(), torch.tensor(labels)
    with torch.no_grad():
        per_window, shared = routed.router(WINDOWS), routed.route(WINDOWS, groups)
        for group in groups.unique():
            members = groups == group
            expected = per_window[members].mean(0).log_softmax(-1)
            assert torch.allclose(shared[members], expected.expand(int(members.sum()), -1), atol=1e-5)
        relabelled = routed.route(WINDOWS, 10 * groups + 7)  # only which windows share a group matters
        assert torch.allclose(relabelled, shared)


def test_the_pipeline_routes_each_expression_as_a_whole_whatever_it_is_batched_with():
    _, test = tiny_problem()
    ink = torch.cat([test.windows(i) for i in range(len(test))]).float().mean(dim=(-2, -1)) / 255.0
    pipeline = HintPipeline(_routed(threshold=float(ink.median())), tiny_pipeline().table)
    picked = [0, 40, 1, 41, 42, 2]  # one symbol or three
    together = pipeline.read(*test.batch(picked))
    with torch.no_grad():  # the test means something only where the router's weights differ within an expression
        longest = max(picked, key=lambda i: len(test.windows(i)))
        assert pipeline.classifier.router(test.windows(longest)).exp()[:, 0].std() > 0.1
    with torch.no_grad():
        for row, i in enumerate(picked):
            alone = pipeline.read(*test.batch([i]))
            length = len(test.windows(i))
            assert torch.allclose(together.log_probs[row, :length], alone.log_probs[0, :length], atol=1e-5)
            one_group = pipeline.classifier(test.windows(i), torch.zeros(length, dtype=torch.long))
            assert torch.allclose(alone.log_probs[0, :length], one_group, atol=1e-5)
    assert together.values == [pipeline.read(*stack_windows([test.windows(i)])).values[0] for i in picked]


def test_a_routed_reader_of_routed_readers_routes_the_inner_one_by_expression_too():
    inner = _routed()
    outer = RoutedReader([inner, _reader(3)], _routed((0.0, 0.0)).router).eval()  # an adapted pipeline adapted again
    groups = torch.arange(12) // 4
    with torch.no_grad():
        expected = (
            torch.stack([inner(WINDOWS, groups), outer.readers[1](WINDOWS)], dim=1) + outer.route(WINDOWS, groups).unsqueeze(-1)
        ).logsumexp(dim=1)
        torch.testing.assert_close(outer(WINDOWS, groups), expected)  # the inner reader routed window by window
    assert not torch.allclose(inner(WINDOWS, groups), inner(WINDOWS))  # (the groups matter to the inner reader)


def test_bad_routes_are_refused():
    with pytest.raises(ValueError, match="share one vocabulary"):
        RoutedReader([_reader(0), _reader(1, "0123456789")], _reader(2, ("first", "new")))
    with pytest.raises(ValueError, match="the router has 3 classes for 2 readers"):
        RoutedReader([_reader(0), _reader(1)], _reader(2, ("a", "b", "c")))
    with pytest.raises(TypeError, match="the router must be a classifier with a vocabulary .*, got Linear"):
        RoutedReader([_reader(0), _reader(1)], torch.nn.Linear(4, 2))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"A routed reader calls its reader as reader\(windows, groups\)"):
        RoutedReader([_reader(0), OneArgument()], _reader(2, ("a", "b")))
    with pytest.raises(ValueError, match=r"one index per window \(12\), got torch.int64 \(5,\)"):
        _routed().route(WINDOWS, torch.zeros(5, dtype=torch.long))
    with pytest.raises(ValueError, match=r"groups must be an integer tensor, one index per window \(12\), got list"):
        _routed().route(WINDOWS, [0] * 12)
    with pytest.raises(ValueError, match=r"groups must be an integer tensor, .* got torch.bool \(12,\)"):  # was read as 0/1
        _routed().route(WINDOWS, torch.ones(12, dtype=torch.bool))
    empty = WINDOWS[:0]
    assert _routed()(empty, torch.zeros(0, dtype=torch.long)).shape == (0, len(HINT_SYMBOLS))  # an empty batch: no reading


def test_route_readers_refuses_readers_of_other_vocabularies_before_training_the_router(monkeypatch):
    train, _ = tiny_problem()
    sources = [WindowSource(train.records[:4], train.dataset.bank, "train")] * 2

    def trained(*args, **kwargs):
        raise AssertionError("the router was trained before the readers were checked")

    monkeypatch.setattr("neurosym.pipelines.routing.refit_reader", trained)
    with pytest.raises(ValueError, match="share one vocabulary"):
        route_readers([_reader(0), _reader(1, "0123456789")], sources, RefitConfig(5), torch.device("cpu"))


def test_route_readers_learns_where_windows_came_from_and_routes_each_expression_to_its_reader(tmp_path):
    train, test = tiny_problem()
    bank = train.dataset.bank
    # another "writer": a faint pen (the prototypes' inverses, random patterns alike, were told apart from some seeds only)
    faint = SymbolBank(bank.images // 3, bank.labels, bank.pools, bank.paths)
    first, other = train.records[:40], train.records[40:80]
    sources = [WindowSource(first, bank, "train"), WindowSource(other, faint, "train")]
    readers = [_reader(0), _reader(1)]
    config = RefitConfig(60, batch_size=32, learning_rate=3e-3, augment_shift=1)  # (sure from seeds 0-7)
    routed = route_readers(readers, sources, config, torch.device("cpu"), tmp_path / "routing.pt")
    assert routed.readers[0] is readers[0] and routed.readers[1] is readers[1]
    assert load_checkpoint(tmp_path / "routing.pt")["step"] == 60
    with torch.no_grad():
        for k, images in enumerate((bank, faint)):  # held-out expressions, each routed as a whole
            windows, lengths = WindowSource(test.records[40:], images, "test").batch(range(40))
            groups = torch.repeat_interleave(torch.arange(40), lengths)
            flat = torch.cat([windows[i, : lengths[i]] for i in range(40)])
            weights = routed.route(flat, groups).exp()[:, k]
            assert weights.min() > 0.5 and weights.mean() > 0.9
    with pytest.raises(ValueError, match="one source per reader and at least two, got 2 and 1"):
        route_readers(readers, sources[:1], RefitConfig(1), torch.device("cpu"))


def test_the_router_starts_from_its_config_s_seed_whatever_the_caller_drew():
    train, _ = tiny_problem()
    bank = train.dataset.bank
    sources = [WindowSource(train.records[:4], bank, "train"), WindowSource(train.records[4:8], bank, "train")]
    readers, routers = [_reader(0), _reader(1)], []
    for drawn in (0, 1):  # a fresh run and a resumed one reach the routing stage with other global streams
        torch.manual_seed(drawn)
        before = torch.get_rng_state()
        routed = route_readers(readers, sources, RefitConfig(1, batch_size=4, seed=3), torch.device("cpu"))
        routers.append(routed.router.state_dict())
        assert torch.equal(torch.get_rng_state(), before)  # the caller's stream goes on untouched
    assert all(torch.equal(routers[0][name], tensor) for name, tensor in routers[1].items())  # (was: other initial weights)


def test_readers_and_a_router_of_other_window_sides_are_refused_when_routed():
    with pytest.raises(ValueError, match=r"the readers of a routed reader must read windows of one side, got sides \[28, 32\]"):
        RoutedReader([_reader(0), _reader(1)], SymbolClassifier(["first", "new"], window=28, features=8, width=4))
    assert _routed((0.0, 0.0)).window == 32 and _routed().window == 32  # (InkRouter states no side)


def test_a_float64_routed_reader_mixes_in_float64():
    routed = _routed((0.3, -0.3)).double()
    windows = torch.rand(4, 32, 32, dtype=torch.float64)
    with torch.no_grad():
        read = routed(windows)
        weights = routed.router(windows).exp()
        mixture = sum(weights[:, k : k + 1] * routed.readers[k](windows).exp() for k in range(2))
    assert read.dtype == torch.float64  # (rounded to float32 before mixing)
    torch.testing.assert_close(read, mixture.log(), rtol=0, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(st.lists(  # 2 readers over 4 symbols, each ruling some (not all) out: a symbol may be ruled out by both
    st.tuples(st.lists(st.floats(-3, 3), min_size=4, max_size=4),
              st.lists(st.booleans(), min_size=4, max_size=4).filter(lambda out: not all(out))),
    min_size=2, max_size=2))  # fmt: skip
def test_a_symbol_every_reader_rules_out_reads_minus_infinity_with_finite_gradients(readers):
    routed = RoutedReader([RulingOut(scores, out) for scores, out in readers], InkRouter(0.5))
    with torch.no_grad():
        expected = routed(WINDOWS)
    read = routed(WINDOWS)
    torch.testing.assert_close(read.detach(), expected)
    alive = ~torch.tensor([first and second for first, second in zip(readers[0][1], readers[1][1])])
    assert torch.isneginf(read[:, ~alive]).all() and torch.isfinite(read[:, alive]).all()
    read[:, alive].sum().backward()  # (torch's logsumexp gave NaN gradients through a column all readers rule out)
    got = [reader.scores.grad.clone() for reader in routed.readers]
    routed.zero_grad()
    readings = torch.stack([reader(WINDOWS) for reader in routed.readers], dim=1)[..., alive]
    (readings + routed.route(WINDOWS).unsqueeze(-1)).logsumexp(dim=1).sum().backward()
    for gradient, reader in zip(got, routed.readers):
        torch.testing.assert_close(gradient, reader.scores.grad)
