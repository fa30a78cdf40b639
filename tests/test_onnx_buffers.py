"""The buffers a session's steps share by liveness (dnnq/onnx/buffers.py)."""
import numpy as np
import pytest

from dnnq.onnx.buffers import BufferPool, plan_slots

RNG = np.random.default_rng(7)


class FakeStep:
    def __init__(self, inputs, outputs, fresh):
        self.inputs, self.outputs, self.fresh = inputs, outputs, fresh


def random_steps(n, rng):
    """A random step list: each step reads one to three earlier values (or the graph
    input); fresh steps write new memory, the others may return a view of any input."""
    steps, values = [], ["input"]
    for i in range(n):
        k = int(rng.integers(1, 4))
        ins = list(rng.choice(values, size=min(k, len(values)), replace=False))
        fresh = bool(rng.random() < 0.7)
        outs = [f"v{i}"] if fresh or rng.random() < 0.5 else [f"v{i}", f"w{i}"]
        steps.append(FakeStep(ins, outs, fresh))
        values += outs
    return steps


def live_ranges(steps, pooled):
    """For each pooled step index: (its index, the last step reading its memory), from the
    transitive set of values that may view it (written apart from plan_slots)."""
    producer = {o: i for i, st in enumerate(steps) for o in st.outputs}

    def views_of(value):
        out, todo = {value}, [value]
        while todo:
            v = todo.pop()
            for st in steps:
                if v in st.inputs and producer[st.outputs[0]] not in pooled:
                    for o in st.outputs:
                        if o not in out:
                            out.add(o)
                            todo.append(o)
        return out

    ranges = {}
    for i in pooled:
        vs = views_of(steps[i].outputs[0])
        reads = [j for j, st in enumerate(steps) if any(x in vs for x in st.inputs)]
        ranges[i] = (i, max(reads + [i]))
    return ranges


@pytest.mark.parametrize("seed", range(40))
def test_shared_slots_never_overlap(seed):
    rng = np.random.default_rng(seed)
    steps = random_steps(int(rng.integers(1, 40)), rng)
    pooled = [i for i, st in enumerate(steps) if st.fresh and len(st.outputs) == 1]
    sizes = {i: int(rng.integers(1, 1 << 20)) for i in pooled}
    slot_of, nslots = plan_slots(steps, sizes)
    assert set(slot_of) == set(pooled)
    assert all(0 <= s < nslots for s in slot_of.values())
    ranges = live_ranges(steps, set(pooled))
    for a in pooled:
        for b in pooled:
            if a < b and slot_of[a] == slot_of[b]:
                # b is written at its step: a's memory must be read for the last time before
                assert ranges[a][1] < b, (a, b, ranges[a])


def test_chain_reuses_the_most_recently_freed_buffer():
    """A chain x -> a -> b -> c -> d: two buffers in turn, each step writing the one its
    source's producer read from (freed one step earlier, still in cache)."""
    steps = [FakeStep(["x"], ["a"], True), FakeStep(["a"], ["b"], True),
             FakeStep(["b"], ["c"], True), FakeStep(["c"], ["d"], True)]
    slot_of, nslots = plan_slots(steps, {i: 100 for i in range(4)})
    assert nslots == 2
    assert [slot_of[i] for i in range(4)] == [0, 1, 0, 1]


def test_a_view_keeps_its_base_alive():
    """a is read only through a view (a reshape: not fresh) at the last step: no step in
    between may write a's buffer."""
    steps = [FakeStep(["x"], ["a"], True), FakeStep(["a"], ["a_view"], False),
             FakeStep(["x"], ["b"], True), FakeStep(["b"], ["c"], True),
             FakeStep(["a_view", "c"], ["d"], True)]
    pooled = {0: 64, 2: 64, 3: 64, 4: 64}
    slot_of, _ = plan_slots(steps, pooled)
    assert slot_of[0] not in (slot_of[2], slot_of[3])


def test_larger_output_prefers_a_slot_that_fits():
    """Two freed slots (100 and 1000 bytes): a 500-byte output takes the 1000-byte one even
    though the 100-byte one was freed later."""
    steps = [FakeStep(["x"], ["big"], True), FakeStep(["x"], ["small"], True),
             FakeStep(["big", "small"], ["u"], True), FakeStep(["u"], ["w"], True)]
    slot_of, nslots = plan_slots(steps, {0: 1000, 1: 100, 2: 10, 3: 500})
    assert slot_of[3] == slot_of[0] and nslots == 3


def test_pool_arrays_are_aligned_and_grow():
    pool = BufferPool(2)
    a = pool.array(0, (3, 5), np.uint8)
    assert a.shape == (3, 5) and a.dtype == np.uint8 and a.ctypes.data % 64 == 0
    a[:] = 7
    b = pool.array(0, (4, 4), np.float32)  # larger: a new buffer; a keeps the old one
    assert b.ctypes.data % 64 == 0 and b.flags.c_contiguous
    b[:] = 1
    assert (a == 7).all()
    c = pool.array(0, (2, 2), np.int8)  # fits: the grown buffer
    assert np.shares_memory(c, b)
    assert pool.nbytes >= 64
