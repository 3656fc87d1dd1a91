"""The exchange's extra values (batch-norm statistics, the step's scalars)
ride inside gradient packs: the statistics in the first float32 pack, the
scalars in the last, and in a float32 pack of their own where no gradient is
float32 (--use_fp16 --fp16_vars on a model without batch norm) or where the
packs cross in half precision. Checked on engine/exchange/flow.py directly,
with a sum that records which pack carried what."""
import numpy as np
import pytest
import tensorflow as tf

from towertrain.engine.exchange import flow, packing

DEVICES = ["/cpu:0", "/cpu:0"]


def _exchange(gradients, num_packs, apart=False):
    """Sums the per-device `gradients` pack by pack with extra values
    `stats` (first) and `scalars` (last); returns (the Exchanged, each summed
    pack's (index, dtype, length))."""
    per_device = [[tf.constant(g * (d + 1)) for g in gradients] for d in range(len(DEVICES))]
    packs = packing.plan(per_device[0], num_packs)
    sums = []

    def sum_pack(k, flats):
        sums.append((k, flats[0].dtype, int(flats[0].shape[0])))
        total = tf.add_n(flats)
        return [total for _ in flats]
    extra = {"stats": (flow.FIRST, [tf.constant([1.0, 2.0]), tf.constant([0.0, 0.0])]),
             "scalars": (flow.LAST, [tf.constant([3.0, 4.0, 5.0]),
                                     tf.constant([30.0, 40.0, 50.0])])}
    exchanged = flow.exchange_packs(per_device, DEVICES, packs, sum_pack, extra,
                                    extra_values_apart=apart)
    return exchanged, sums


def _assert_sums(exchanged, gradients):
    for d in range(len(DEVICES)):
        np.testing.assert_array_equal(exchanged.extra_values["stats"][d], [1.0, 2.0])
        np.testing.assert_array_equal(exchanged.extra_values["scalars"][d], [33.0, 44.0, 55.0])
        for got, gradient in zip(exchanged.gradients(d), gradients):
            np.testing.assert_array_equal(got, 3 * gradient)
        assert bool(exchanged.finite[d])
    # Every device's list at once, as LocalExchange.reduce and the
    # cross-worker start-up sums read them.
    per_device = exchanged.per_device
    assert len(per_device) == len(DEVICES)
    for summed in per_device:
        assert len(summed) == len(gradients)
        for got, gradient in zip(summed, gradients):
            np.testing.assert_array_equal(got, 3 * gradient)


def test_with_no_float32_gradient_the_extra_values_travel_in_a_float32_pack_of_their_own():
    gradients = [np.arange(6, dtype=np.float16).reshape(2, 3), np.ones(4, np.float16)]
    exchanged, sums = _exchange(gradients, num_packs=2)
    assert sums == [(0, tf.float16, 5), (1, tf.float16, 5), (2, tf.float32, 5)]
    _assert_sums(exchanged, gradients)


def test_among_several_float32_packs_stats_ride_the_first_and_scalars_the_last():
    """Packs, dtypes in name order: 3 float16, 3 float32, 3 float64; the
    chosen float32 packs are neither the first nor the last pack."""
    gradients = [np.ones(4, np.float16), np.arange(9, dtype=np.float32),
                 np.full(3, 2.0, np.float64), np.ones(2, np.float16)]
    exchanged, sums = _exchange(gradients, num_packs=3)
    float32 = [(k, length) for k, dtype, length in sums if dtype == tf.float32]
    assert float32 == [(3, 3 + 2), (4, 3), (5, 3 + 3)]  # the plain packs hold 3 each
    assert [dtype for _, dtype, _ in sums] == [tf.float16] * 3 + [tf.float32] * 3 + \
        [tf.float64] * 3
    _assert_sums(exchanged, gradients)


def test_a_half_precision_transfer_sends_the_extra_values_apart():
    gradients = [np.arange(4, dtype=np.float32)]
    exchanged, sums = _exchange(gradients, num_packs=0, apart=True)
    assert sums == [(0, tf.float32, 4), (1, tf.float32, 5)]
    _assert_sums(exchanged, gradients)


@pytest.mark.parametrize("num_packs, poisoned", [(3, 4), (2, 8)])
def test_a_non_finite_sum_in_any_pack_but_the_first_is_seen(num_packs, poisoned):
    """Three packs with the NaN in the middle one, two with it in the last:
    every device's verdict says not finite (each pack is checked, not only
    the first)."""
    gradients = [np.arange(9, dtype=np.float32)]
    gradients[0][poisoned] = np.nan
    exchanged, sums = _exchange(gradients, num_packs=num_packs)
    assert [k for k, _, _ in sums] == list(range(num_packs))
    assert [bool(verdict) for verdict in exchanged.finite] == [False, False]
    fine, _ = _exchange([np.arange(9, dtype=np.float32)], num_packs=num_packs)
    assert [bool(verdict) for verdict in fine.finite] == [True, True]
