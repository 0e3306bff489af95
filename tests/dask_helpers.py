"""What the tests of fits on a dask X share (`test_dask_fit.py`, `test_boosting_dask.py`).

A 2-process `LocalCluster` (the ``client`` fixture), an X whose values refuse to reach the client
(`guarded`), the sizes of what the client gathers (the ``gathered`` fixture) and the check that a
fit left nothing on the workers (`assert_released`).

A plain module, imported by those test modules after their ``pytest.importorskip`` of dask and
distributed, which it needs at import. The fixtures take effect where they are imported: each
importing module gets its own ``client`` (module scope: one cluster per module, started when its
first test asks for it).
"""
import gc
import time

import dask.array as da
import distributed
import pytest


@pytest.fixture(scope="module")
def client():
    """A `distributed.Client` of a `LocalCluster` of 2 worker processes of 1 thread each.

    Separate processes (``processes=True``): every task, block and callback crosses a process
    boundary by pickling, as on several machines, so that "X stays on the workers" is a claim
    about bytes that really move (threads in this process would share X's objects by reference).
    """
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                       silence_logs=40)
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


class Guarded(da.Array):
    """A dask array whose values cannot be brought to the client: ``np.asarray``/``compute``/``persist`` raise."""
    __slots__ = ()

    def __array__(self, *args, **kwargs):
        raise AssertionError("np.asarray(X) would materialise X on the client")

    def __dask_postcompute__(self):
        raise AssertionError("computing X would materialise it on the client")

    def persist(self, **kwargs):
        raise AssertionError("X.persist() would hold X on the client with the local scheduler")


def guarded(X):
    """``X`` (a `dask.array.Array`) made a `Guarded` array in place, and returned."""
    X.__class__ = Guarded
    return X


@pytest.fixture
def gathered(monkeypatch):
    """Sizes (bytes) of every result the client gathers from the workers."""
    sizes = []
    original = distributed.Client._gather

    async def recording(self, futures, *args, **kwargs):
        result = await original(self, futures, *args, **kwargs)
        values = result if isinstance(result, (list, tuple)) else [result]
        for v in values:
            items = v if isinstance(v, (list, tuple)) else [v]
            sizes.append(sum(getattr(x, "nbytes", 0) for x in items))
        return result

    monkeypatch.setattr(distributed.Client, "_gather", recording)
    return sizes


def assert_released(client, timeout=5.0):
    """Nothing is left on the workers (the release of futures reaches the scheduler asynchronously)."""
    gc.collect()
    deadline = time.monotonic() + timeout
    while client.who_has() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not client.who_has()
