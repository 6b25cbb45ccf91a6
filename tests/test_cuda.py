"""What must hold on a CUDA device: the units and the stroke normaliser compute there what they compute on the CPU,
a seeded block gives the caller's streams back, the batched arithmetic training resumes exactly, a resumed training
keeps its best weights on the CPU, a recurrent seq2seq model maps an empty batch to empty outputs, every kind of
attention gives a query with no allowed key zeros (no NaN) in float32 and under bfloat16 autocast, and the grammar
pipeline learns with mixed precision.

Marked ``cuda``: skipped without a GPU, run by ``make gpu-check`` (``benchmarks/device_check.py``);
``NEUROSYM_CUDA_TESTS_ON=cpu`` runs them on the CPU to check the tests themselves.
"""

from __future__ import annotations

import itertools
import json

import pytest
import torch
from test_attention import DIM, make
from test_seq2seq import BOS, EOS, reversal_batch, tiny_model
from test_tasks import addition_pipeline, addition_problem, tiny_training
from torch import nn

from neurosym.benchmarking.arithmetic_results import group_cells
from neurosym.benchmarking.arithmetic_training import GraphedStep, GroupConfig, build, train_group
from neurosym.cli import main
from neurosym.layers import NALU, NAU, NMU, NPU
from neurosym.perception.augment import augment_windows
from neurosym.perception.strokes import StrokeNormaliser, skeletonise
from neurosym.pipelines.grammar_pipeline import evaluate_grammar_pipeline, train_grammar_pipeline
from neurosym.training import DistributedContext, TrainConfig, TrainResult, load_checkpoint, resolve_device, train
from neurosym.training.seeding import seeded
from neurosym.training.stopping import StopRequests
from neurosym.training.update import adam

pytestmark = pytest.mark.cuda


def test_auto_picks_the_gpu(accelerator):
    assert resolve_device("auto").type == accelerator.type


@pytest.mark.parametrize("cls", [NMU, NAU, NALU, NPU])
def test_units_compute_on_the_device_what_they_compute_on_the_cpu(cls, accelerator):
    """float64, an ensemble of 3, exact zeros and a product that overflows float32's range in one member:
    the device route (no host reads) agrees with the CPU's chunked route, gradients included."""
    torch.manual_seed(0)
    unit = cls(6, 4, ensemble=3).double()
    x = torch.randn(3, 9, 6, dtype=torch.float64)
    x[0, 0, :2] = 0.0
    x[2] *= 1e30
    moved = cls(6, 4, ensemble=3).double().to(accelerator)
    moved.load_state_dict(unit.state_dict())
    x_cpu, x_device = x.clone().requires_grad_(True), x.to(accelerator).requires_grad_(True)
    y_cpu, y_device = unit(x_cpu), moved(x_device)
    torch.testing.assert_close(y_device.cpu(), y_cpu, rtol=1e-9, atol=1e-12, equal_nan=True)
    seed = torch.randn_like(y_cpu)
    (y_cpu.nan_to_num() * seed).sum().backward()
    (y_device.nan_to_num() * seed.to(accelerator)).sum().backward()
    torch.testing.assert_close(x_device.grad.cpu(), x_cpu.grad, rtol=1e-7, atol=1e-9)
    for (name, on_cpu), on_device in zip(unit.named_parameters(), moved.parameters()):
        torch.testing.assert_close(on_device.grad.cpu(), on_cpu.grad, rtol=1e-7, atol=1e-9, msg=name)


@pytest.mark.parametrize("name", ["lstm_att_bi", "gru"])
def test_a_recurrent_model_maps_an_empty_batch_to_empty_outputs_on_the_device(name, accelerator):
    """The recurrent kernels run an empty batch (unpacked: torch cannot pack one) on the device as on the CPU."""
    src, src_mask, tgt_in, _ = (tensor[:0].to(accelerator) for tensor in reversal_batch(4))
    model = tiny_model(name).to(accelerator)
    assert model(src, src_mask, tgt_in).shape == (0, tgt_in.shape[1], 13)
    assert model.eval().greedy_decode(src, src_mask, max_len=5, bos=BOS, eos=EOS).shape == (0, 1)


@pytest.mark.parametrize("autocast", [False, True])
@pytest.mark.parametrize("kind", ["vanilla", "xl", "xl_clipped", "shaw"])
def test_a_query_with_no_allowed_key_gets_zeros_on_the_device_as_on_the_cpu(kind, autocast, accelerator):
    """Blind queries (causal over left padding, and a row of ``attn_mask`` that allows no key) get zeros before the
    output projection on the device too, where the fused attention kernels run: no NaN, finite gradients, and the other
    queries as on the CPU (some CUDA kernels of PyTorch once gave NaN for a fully masked row)."""
    module = make(kind).train()  # (dropout 0: train mode only to take gradients as training does)
    moved = make(kind).train().to(accelerator)
    x = torch.randn(2, 4, DIM)
    padding = torch.tensor([[True, True, False, False], [False, False, False, False]])
    mask = torch.ones(4, 4, dtype=torch.bool)
    mask[3] = False  # (the last query of each element sees no key)
    x_device = x.to(accelerator).requires_grad_(True)
    with torch.autocast(accelerator.type, dtype=torch.bfloat16, enabled=autocast):
        out = moved(x_device, key_padding_mask=padding.to(accelerator), attn_mask=mask.to(accelerator), causal=True)
    expected = module(x, key_padding_mask=padding, attn_mask=mask, causal=True)
    blind = moved.out_proj.bias.expand(2, DIM).to(out.dtype)
    assert bool(out.isfinite().all())
    torch.testing.assert_close(out[0, :2], blind[:2])
    torch.testing.assert_close(out[:, 3], blind)
    tolerance = {"atol": 5e-2, "rtol": 5e-2} if autocast else {"atol": 1e-5, "rtol": 1e-4}
    torch.testing.assert_close(out.float().cpu(), expected, **tolerance)
    out.float().square().sum().backward()
    assert all(p.grad is None or bool(p.grad.isfinite().all()) for p in [x_device, *moved.parameters()])


def test_the_stroke_normaliser_redraws_on_the_device_what_it_redraws_on_the_cpu(accelerator):
    """Random ink and the two dots of a division sign (isolated 2x2 squares, kept by indexing the neighbour codes):
    the same skeletons on the device, and the same pen and blur to float rounding."""
    generator = torch.Generator().manual_seed(0)
    windows = (torch.rand(32, 1, 32, 32, generator=generator) > 0.6) * torch.rand(32, 1, 1, 1, generator=generator)
    windows[0] = 0.0
    windows[0, 0, 15:17, 8:24] = windows[0, 0, 9:11, 15:17] = windows[0, 0, 21:23, 15:17] = 1.0
    ink = windows[:, 0] > 0.2
    assert torch.equal(skeletonise(ink.to(accelerator)).cpu(), skeletonise(ink))
    normaliser = StrokeNormaliser(width=3)
    on_cpu = normaliser(windows)
    torch.testing.assert_close(normaliser.to(accelerator)(windows.to(accelerator)).cpu(), on_cpu, rtol=1e-5, atol=1e-6)


def test_a_seeded_cpu_generator_augments_windows_on_the_device_as_on_the_cpu_and_one_there_is_refused(accelerator):
    windows = torch.zeros(16, 32, 32, dtype=torch.uint8)
    windows[:, 15:17, 6:26] = 255
    on_cpu = augment_windows(windows, 2, 1.0, torch.Generator().manual_seed(5))
    on_device = augment_windows(windows.to(accelerator), 2, 1.0, torch.Generator().manual_seed(5))
    assert on_device.device.type == accelerator.type
    assert (on_device.cpu().int() - on_cpu.int()).abs().max() <= 1  # the same draws, to rounding
    if accelerator.type != "cpu":  # (torch's own error came from deep inside the draw)
        with pytest.raises(ValueError, match=f"must be a CPU torch.Generator .* got one on {accelerator.type}"):
            augment_windows(windows.to(accelerator), 2, 1.0, torch.Generator(device=accelerator).manual_seed(5))


def test_a_seeded_block_on_the_device_draws_alike_and_gives_the_callers_streams_back(accelerator):
    draws = []
    for caller_seed in (1, 2):
        torch.manual_seed(caller_seed)
        expected = torch.rand(3, device=accelerator), torch.rand(3)
        torch.manual_seed(caller_seed)
        with seeded(7, accelerator):
            draws.append(torch.rand(3, device=accelerator))
        for drawn, before in zip((torch.rand(3, device=accelerator), torch.rand(3)), expected):
            torch.testing.assert_close(drawn, before, rtol=0, atol=0)  # as if the block had not run
    assert torch.equal(draws[0], draws[1])


def test_batched_arithmetic_training_resumes_exactly_on_the_device(tmp_path, accelerator):
    config = GroupConfig("NMU", ("mul", "add"), (0, 1, 2), steps=200, eval_every=100, evaluation_size=200)
    straight = train_group(config, accelerator, tmp_path / "straight.pt", progress=False)
    stopped = train_group(config, accelerator, tmp_path / "resumed.pt", stops=StopRequests(0), progress=False)
    assert stopped.step == 1 and stopped.stop_reason is not None
    resumed = train_group(config, accelerator, tmp_path / "resumed.pt", resume=True, progress=False)
    assert straight.finished and resumed.finished and resumed.curves.steps == [100, 200]
    for name, values in straight.curves.stacked().items():
        torch.testing.assert_close(resumed.curves.stacked()[name], values, rtol=0, atol=0, msg=name)
    assert torch.isfinite(straight.curves.stacked()["validation"]).all()


def test_a_resumed_training_keeps_its_best_weights_on_the_cpu(tmp_path, accelerator):
    """The checkpoint is read onto the device; its best weights go back to the CPU, where the evaluations keep them."""
    torch.manual_seed(0)
    data = [(x, x.sum(0, keepdim=True)) for x in torch.randn(16, 3)]
    context = DistributedContext(0, 1, 0, accelerator)
    scores = itertools.chain([1.0], itertools.repeat(0.0))  # the first evaluation's weights stay the best

    def run(steps: int) -> TrainResult:
        config = TrainConfig(steps, 4, eval_every=2, checkpoint=tmp_path / "run.pt")
        return train(nn.Linear(3, 1), data, lambda model, batch: (model(batch[0]) - batch[1]).square().mean(), config,
                     context, evaluate=lambda model: next(scores))  # fmt: skip

    assert run(4).best_step == 2 and run(6).steps_this_call == 2
    saved = torch.load(tmp_path / "run.pt", weights_only=False)  # (each tensor on the device it was saved from)
    assert {value.device.type for value in saved["loop"]["best_model"].values()} == {"cpu"}


def test_the_cuda_graph_step_trains_as_the_eager_step_and_resumes_exactly(tmp_path, accelerator):
    """The whole step captured into a CUDA graph (the batch drawn inside it from the data's generator) follows
    the eager steps up to the rounding of Adam's capturable update, and resumes exactly."""
    config = GroupConfig("NMU", ("mul", "add"), (0, 1, 2), steps=300, eval_every=100, evaluation_size=200, schedule="scaled")
    eager = train_group(config, accelerator, progress=False)
    straight = train_group(config, accelerator, tmp_path / "straight.pt", progress=False, cuda_graph=True)
    stopped = train_group(config, accelerator, tmp_path / "resumed.pt", stops=StopRequests(0), progress=False, cuda_graph=True)
    assert stopped.step == 1
    resumed = train_group(config, accelerator, tmp_path / "resumed.pt", resume=True, progress=False, cuda_graph=True)
    assert straight.finished and resumed.finished
    for name, values in straight.curves.stacked().items():
        torch.testing.assert_close(resumed.curves.stacked()[name], values, rtol=0, atol=0, msg=name)
        torch.testing.assert_close(values, eager.curves.stacked()[name], rtol=1e-4, atol=1e-6, msg=name)


def test_a_compiled_loss_inside_the_cuda_graph_step_trains_as_the_eager_loss(accelerator):
    config = GroupConfig("NMU", ("mul", "add"), (0, 1, 2), steps=5_000_000, evaluation_size=1, schedule="scaled")
    trained = []
    for compile_loss in (False, True):
        data, model = build(config, accelerator)
        optimizer = adam(model.parameters(), 1e-3, capturable=accelerator.type == "cuda")
        step = GraphedStep(model, optimizer, data, batch_size=32, compile_loss=compile_loss)
        for index in range(60):
            step(index)
        trained.append([parameter.detach().cpu() for parameter in model.parameters()])
    for eager, compiled in zip(*trained):
        torch.testing.assert_close(compiled, eager, rtol=1e-4, atol=1e-6)


def test_the_grammar_pipeline_learns_two_digit_addition_on_the_device(accelerator):
    train, test = addition_problem(2, 600, seed=0), addition_problem(2, 200, seed=1)
    pipeline = addition_pipeline(0)
    train_grammar_pipeline(pipeline, train, tiny_training(250), accelerator)
    after = evaluate_grammar_pipeline(pipeline, test, accelerator)
    assert after["symbol"] > 0.85 and after["accuracy"] > 0.6
    assert next(pipeline.reader.parameters()).device.type == accelerator.type
    pipeline.reader.cpu()
    assert evaluate_grammar_pipeline(pipeline, test, accelerator) == pytest.approx(after)
    assert next(pipeline.reader.parameters()).device.type == "cpu"  # (an evaluation left it on the device)


def test_the_arithmetic_command_runs_on_the_device_and_says_so(tmp_path, accelerator):
    out = tmp_path / "run"
    argv = ["arithmetic", "--models", "nau", "--ops", "add", "--steps", "200", "--seeds", "4", "--eval-every", "100"]
    argv += ["--evaluation-size", "100", "--threshold-samples", "2000", "--out", str(out), "--no-progress"]
    assert main([*argv, "--device", accelerator.type]) == 0
    result = json.loads((out / "results.json").read_text())
    assert result["device"].startswith(accelerator.type) and result["cells"][0]["runs"] == 4


def test_the_arithmetic_command_trains_its_models_side_by_side_as_cuda_graphs(tmp_path, accelerator):
    """``--cuda-graph`` on CUDA: every model in a thread and on a stream of its own, captured while the others run."""
    out = tmp_path / "run"
    argv = ["arithmetic", "--models", "nau,nmu,nalu", "--ops", "add", "--steps", "2000", "--seeds", "8", "--eval-every", "500"]
    argv += ["--evaluation-size", "200", "--threshold-samples", "2000", "--out", str(out), "--no-progress", "--cuda-graph"]
    assert main([*argv, "--device", accelerator.type]) == 0
    result = json.loads((out / "results.json").read_text())
    assert result["finished"] and [cell["model"] for cell in result["cells"]] == ["NAU", "NMU", "NALU"]
    assert all(cell["runs"] == 8 for cell in result["cells"])
    for name in ("nau", "nmu", "nalu"):
        saved = load_checkpoint(out / "checkpoints" / f"{name}.pt")
        assert saved["step"] == 2000 and len(saved["curves"]["steps"]) == 4


def test_the_arithmetic_command_trains_side_by_side_with_compiled_losses(tmp_path, accelerator):
    """``--cuda-graph --compile-loss``: each thread compiles its model's loss (one at a time) and captures it."""
    out = tmp_path / "run"
    argv = ["arithmetic", "--models", "nau,nmu", "--ops", "add", "--steps", "600", "--seeds", "4", "--eval-every", "300"]
    argv += ["--evaluation-size", "200", "--threshold-samples", "2000", "--out", str(out), "--no-progress"]
    assert main([*argv, "--cuda-graph", "--compile-loss", "--device", accelerator.type]) == 0
    result = json.loads((out / "results.json").read_text())
    assert result["finished"] and [cell["runs"] for cell in result["cells"]] == [4, 4]
    for name in ("nau", "nmu"):
        curves = load_checkpoint(out / "checkpoints" / f"{name}.pt")["curves"]
        assert curves["steps"] == [300, 600] and torch.isfinite(torch.stack(curves["validation"])).all()


def test_a_finished_arithmetic_run_read_back_on_the_device_keeps_its_curves_on_the_cpu(tmp_path, accelerator):
    """Re-running a finished table reads its checkpoints onto the device; the curves (and so the table
    built from them) stay on the CPU."""
    config = GroupConfig("NAU", ("add",), (0, 1), steps=100, eval_every=100, evaluation_size=100)
    first = train_group(config, accelerator, tmp_path / "nau.pt", progress=False)
    again = train_group(config, accelerator, tmp_path / "nau.pt", resume=True, progress=False)
    assert again.finished and again.curves.steps == first.curves.steps
    assert {value.device.type for name in ("validation", "test", "sparsity") for value in getattr(again.curves, name)} == {"cpu"}
    cells = group_cells(again, {"add": 1.0})
    assert cells[0]["per_seed"]["best_step"] == [100, 100]
