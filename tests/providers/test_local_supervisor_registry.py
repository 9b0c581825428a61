"""The supervisors' registry: `stop_all` forgets them, so what one supervisor counted (its
crashes, which a `once` fault switch reads) does not carry into the next test or host in the
same process. Without this, a test whose fault said `once` disarmed the next test's fault when
xdist happened to run both in one worker."""

from __future__ import annotations

from pathlib import Path

from tether.providers.local.supervisor import stop_all, supervisor_for


def test_stop_all_forgets_supervisors_and_their_crash_counts(tmp_path: Path) -> None:
    model = tmp_path / "model.gguf"
    first = supervisor_for(model, 256)
    first.crashes = 1
    assert supervisor_for(model, 256) is first  # one per (model, n_ctx) while it runs
    stop_all()
    again = supervisor_for(model, 256)
    assert again is not first
    assert again.crashes == 0
    assert again._fault()  # pyright: ignore[reportPrivateUsage]  # `once` armed again
    stop_all()
