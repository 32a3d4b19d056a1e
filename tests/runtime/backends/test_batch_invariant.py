"""The exact mode's reductions: linear layers as products of one shape, the chunk sums' fixed
tree, and attention whose output for a row is the same bits however many masked key chunks
its pass padded it to."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

import torch

from edgespec.runtime.backends.batch_invariant import (
    ATTENTION_NAME,
    COLUMN_BLOCK,
    KEY_CHUNK,
    ROW_MULTIPLE,
    invariant_attention,
    invariant_linear,
    library_kernels,
    make_batch_invariant,
    pairwise_sum,
)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(
    ("inputs", "outputs"), [(640, 2048), (2048, 640), (64, 3 * COLUMN_BLOCK + 5)]
)
def test_a_row_is_the_same_bits_alone_and_among_any_number_of_rows(
    inputs: int, outputs: int, threads: int
) -> None:
    """One row's output as in a one-token pass, and beside 1..40 others. A single product
    over rows padded to a multiple of 4 differed here on an AVX-512 CPU (MKL picks its
    kernel, and on two threads its split, by the row count: Gemma 3 270M's layers are
    640 → 2048 and 2048 → 640)."""
    g = torch.Generator().manual_seed(inputs + outputs)
    weight = torch.randn(outputs, inputs, generator=g)
    bias = torch.randn(outputs, generator=g)
    rows = torch.randn(41, inputs, generator=g)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        alone = invariant_linear(rows[:1], weight, bias)
        for count in (2, 3, 5, 8, 9, 17, 24, 41):
            among = invariant_linear(rows[:count].flip(0), weight, bias)  # the row last
            assert torch.equal(among[count - 1], alone[0]), count
    finally:
        torch.set_num_threads(before)


def test_every_product_has_one_shape_whatever_the_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """ROW_MULTIPLE rows × at most COLUMN_BLOCK outputs each; the outputs equal F.linear's."""
    shapes: set[tuple[int, int]] = set()
    linear = torch.nn.functional.linear

    def recording(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None) -> torch.Tensor:
        shapes.add((x.shape[0], w.shape[0]))
        return linear(x, w, b)

    monkeypatch.setattr(torch.nn.functional, "linear", recording)  # as batch_invariant calls it
    g = torch.Generator().manual_seed(0)
    weight = torch.randn(2 * COLUMN_BLOCK + 3, 16, generator=g)
    for count in (1, ROW_MULTIPLE - 1, ROW_MULTIPLE, ROW_MULTIPLE + 1, 5 * ROW_MULTIPLE + 2):
        x = torch.randn(1, count, 16, generator=g)
        out = invariant_linear(x, weight, None)
        torch.testing.assert_close(out, linear(x, weight))
        assert out.shape == (1, count, weight.shape[0])
    assert shapes == {(ROW_MULTIPLE, COLUMN_BLOCK), (ROW_MULTIPLE, 3)}


def _parts(count: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(3, count, 5, generator=torch.Generator().manual_seed(seed))


def test_the_tree_adds_first_halves_to_second_halves_after_padding_to_a_power_of_two() -> None:
    p = _parts(5)
    slices = [p[:, i] for i in range(5)]
    # width 8: [p0+p4, p1+0, p2+0, p3+0] -> [(p0+p4)+p2, p1+p3] -> their sum
    expected = ((slices[0] + slices[4]) + slices[2]) + (slices[1] + slices[3])
    assert torch.equal(pairwise_sum(p, dim=1), expected)
    assert torch.equal(pairwise_sum(p.transpose(1, 2), dim=-1), expected)
    assert torch.equal(pairwise_sum(p[:, :1], dim=1), slices[0])


@pytest.mark.parametrize("count", [1, 2, 3, 5, 8, 9, 13])
def test_zero_slices_appended_leave_every_bit(count: int) -> None:
    p = _parts(count, seed=count)
    alone = pairwise_sum(p, dim=1)
    for extra in (1, 3, 8, 20):
        padded = torch.cat([p, torch.zeros(3, extra, 5)], dim=1)
        assert torch.equal(pairwise_sum(padded, dim=1), alone), (count, extra)


def _attend(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, keys: int) -> torch.Tensor:
    """Row 0 of ``invariant_attention`` with only its first ``keys`` key columns unmasked."""
    length = key.shape[2]
    bias = torch.full((1, 1, query.shape[2], length), torch.finfo(torch.float32).min)
    bias[..., :keys] = 0.0
    out, _ = invariant_attention(None, query, key, value, bias)
    return out[0]


@pytest.mark.parametrize("keys", [KEY_CHUNK - 1, 3 * KEY_CHUNK + 7, 5 * KEY_CHUNK])
def test_attention_is_the_same_bits_beside_more_masked_chunks(keys: int) -> None:
    g = torch.Generator().manual_seed(keys)
    query = torch.randn(1, 4, 3, 16, generator=g)
    longest = 11 * KEY_CHUNK + 5  # a batch mate's length: up to 12 chunks
    key = torch.randn(1, 2, longest, 16, generator=g)  # grouped queries: 2 key heads
    value = torch.randn(1, 2, longest, 16, generator=g)
    alone = _attend(query, key[:, :, :keys], value[:, :, :keys], keys)
    for length in (keys + 1, 2 * keys, longest):
        beside = _attend(query, key[:, :, :length], value[:, :, :length], keys)
        assert torch.equal(beside, alone), length


def _eager(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    """Plain causal-free softmax attention, [B, M, H, D] as invariant_attention returns."""
    groups = query.shape[1] // key.shape[1]
    k, v = key.repeat_interleave(groups, 1), value.repeat_interleave(groups, 1)
    weights = torch.softmax(query @ k.transpose(-1, -2) * query.shape[-1] ** -0.5, dim=-1)
    return (weights @ v).transpose(1, 2)


@pytest.mark.parametrize("num_queries", [1, ROW_MULTIPLE, ROW_MULTIPLE + 1, 3 * ROW_MULTIPLE - 2])
def test_every_attention_product_has_one_row_count_whatever_the_block(
    num_queries: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each score and value product takes ROW_MULTIPLE query rows of every grouped head, not
    the pass's longest block: a 9-token verification block (or a follow-up beside a long
    cold start) would otherwise change a CPU GEMM's kernel for every row of the pass."""
    rows: set[int] = set()
    matmul = torch.matmul

    def recording(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        rows.add(a.shape[-2])
        return matmul(a, b)

    monkeypatch.setattr(torch, "matmul", recording)
    g = torch.Generator().manual_seed(num_queries)
    query = torch.randn(2, 4, num_queries, 16, generator=g)
    key = torch.randn(2, 2, 70, 16, generator=g)  # 2 groups of query heads per key head
    value = torch.randn(2, 2, 70, 16, generator=g)
    out, _ = invariant_attention(None, query, key, value, torch.zeros(2, 1, num_queries, 70))
    torch.testing.assert_close(out, _eager(query, key, value))
    assert rows == {2 * ROW_MULTIPLE}


def test_a_row_is_the_same_bits_in_a_short_and_a_long_block_at_head_dim_256() -> None:
    """Head dimension 256 without grouped queries (Gemma-7B-like): on an AVX-512 CPU a score
    product of 8 rows and one of 16 or more ran different kernels, so a query's attention
    differed in its last bits between a 1+γ block and one beside a longer block."""
    g = torch.Generator().manual_seed(256)
    query = torch.randn(1, 2, 3 * ROW_MULTIPLE, 256, generator=g)
    key = torch.randn(1, 2, 100, 256, generator=g)
    value = torch.randn(1, 2, 100, 256, generator=g)
    mask = torch.zeros(1, 1, 3 * ROW_MULTIPLE, 100)
    short, _ = invariant_attention(None, query[:, :, :5], key, value, mask[:, :, :5])
    for count in (ROW_MULTIPLE + 1, 2 * ROW_MULTIPLE, 3 * ROW_MULTIPLE):
        long, _ = invariant_attention(None, query[:, :, :count], key, value, mask[:, :, :count])
        assert torch.equal(long[:, :5], short), count


def test_library_kernels_run_the_model_as_loaded_and_switch_back_as_it_was() -> None:
    """Inside the block the switched model computes what the model as loaded computes, bit
    for bit (the library's linear layers and attention); after it, an error included, the
    exact kernels' logits are the same bits as before the block (the same layer objects)."""
    import copy

    from tests.models.tiny import tiny_target

    loaded = tiny_target()
    model = copy.deepcopy(loaded)
    make_batch_invariant(model, row_multiple=4)
    ids = torch.tensor([[5, 9, 7, 5, 11, 3]])
    with torch.inference_mode():
        exact = model(ids).logits
        library = loaded(ids).logits
        forwards = [vars(m)["forward"] for m in model.modules() if isinstance(m, torch.nn.Linear)]
        with library_kernels(model):
            assert model.config._attn_implementation == loaded.config._attn_implementation
            assert torch.equal(model(ids).logits, library)
        assert model.config._attn_implementation == ATTENTION_NAME
        assert torch.equal(model(ids).logits, exact)
        with pytest.raises(RuntimeError, match="inside"), library_kernels(model):
            raise RuntimeError("inside")
        assert torch.equal(model(ids).logits, exact)
    after = [vars(m)["forward"] for m in model.modules() if isinstance(m, torch.nn.Linear)]
    assert after == forwards and len(forwards) == 2 * 7 + 1  # 7 per layer, and the head
    with library_kernels(loaded):  # never switched: left as it is
        assert "forward" not in vars(loaded.lm_head)
