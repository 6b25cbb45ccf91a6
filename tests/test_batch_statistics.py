"""Batch-norm statistics re-estimated on unlabelled images (AdaBN), restored afterwards."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from neurosym.perception.batch_statistics import batch_statistics_of


def test_statistics_are_those_of_the_new_batches_inside_and_restored_after():
    torch.manual_seed(0)
    network = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)).eval()
    network[1].running_mean.fill_(5.0)
    before = {k: v.clone() for k, v in network.state_dict().items()}
    data = torch.randn(300, 3) * 3 + 2
    features = network[0](data).detach()
    with batch_statistics_of(network, data.split(60)) as seen:
        assert seen == 300 and not network.training
        torch.testing.assert_close(network[1].running_mean, features.mean(dim=0))
        normalised = network(data)
        torch.testing.assert_close(normalised.mean(dim=0), network[1].bias.detach(), atol=1e-4, rtol=0)
    assert not network.training and network[1].momentum == 0.1
    for key, value in network.state_dict().items():
        assert torch.equal(value, before[key]), key


def test_the_statistics_are_estimated_with_dropout_off():
    torch.manual_seed(0)
    network = nn.Sequential(nn.Linear(3, 4), nn.Dropout(0.5), nn.BatchNorm1d(4)).eval()
    data = torch.randn(300, 3) * 3 + 2
    features = network[0](data).detach()
    with batch_statistics_of(network, data.split(60)):
        torch.testing.assert_close(network[2].running_mean, features.mean(dim=0))  # (was the dropped-out features')
        variances = torch.stack([part.var(dim=0) for part in features.split(60)])  # (averaged over the batches)
        torch.testing.assert_close(network[2].running_var, variances.mean(dim=0))


@settings(max_examples=30, deadline=None)
@given(sizes=st.lists(st.sampled_from([0, 2, 3, 5]), min_size=1, max_size=6).filter(any), seed=st.integers(0, 99))
def test_an_empty_batch_leaves_the_statistics_as_the_other_batches_give_them(sizes, seed):
    torch.manual_seed(seed)
    network = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)).eval()
    batches = torch.randn(sum(sizes), 3).split(sizes)  # some empty (one sample is no batch statistic of BatchNorm1d)
    statistics = []
    for given_batches in (batches, [batch for batch in batches if len(batch)]):
        with batch_statistics_of(network, given_batches) as seen:
            statistics.append((seen, network[1].running_mean.clone(), network[1].running_var.clone()))
    (seen, mean, variance), (seen_nonempty, mean_nonempty, variance_nonempty) = statistics
    assert seen == seen_nonempty == sum(sizes)
    assert torch.equal(mean, mean_nonempty) and torch.equal(variance, variance_nonempty)  # (an empty batch counted as one)


def test_no_batch_norm_or_no_images_is_refused_and_leaves_the_module_as_it_was():
    with pytest.raises(ValueError, match="no batch-norm layer"), batch_statistics_of(nn.Linear(2, 2), [torch.zeros(1, 2)]):
        pass
    network = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2)).train()
    mean = network[1].running_mean.clone()
    with pytest.raises(ValueError, match="no images"), batch_statistics_of(network, []):
        pass
    assert network.training and torch.equal(network[1].running_mean, mean) and network[1].momentum == 0.1


def test_a_batch_norm_without_running_statistics_is_left_alone():
    torch.manual_seed(0)
    network = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4, track_running_stats=False), nn.BatchNorm1d(4)).eval()
    before = {k: v.clone() for k, v in network.state_dict().items()}
    data = torch.randn(120, 3)
    features = network[1](network[0](data)).detach()  # normalised by the batch's own statistics
    with batch_statistics_of(network, [data]) as seen:
        assert seen == 120
        torch.testing.assert_close(network[2].running_mean, features.mean(dim=0))
        assert network[1].running_mean is None
    for key, value in network.state_dict().items():
        assert torch.equal(value, before[key]), key
    with pytest.raises(ValueError, match="no batch-norm layer"), batch_statistics_of(network[:2], [data]):
        pass


def test_every_part_gets_its_own_mode_back():
    network = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Sequential(nn.Dropout(0.5), nn.BatchNorm1d(4)))
    network[2].eval()  # a frozen part of a training model
    modes = [module.training for module in network.modules()]
    with batch_statistics_of(network, [torch.randn(8, 3)]):
        pass
    assert [module.training for module in network.modules()] == modes  # (the frozen part came back training)
