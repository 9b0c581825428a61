"""Sessions on disk: an append-only JSONL file per session plus an artifact folder.

Owns: the store (`SessionStore`), the append path (`SessionWriter`), the loaded view
(`LoadedSession`, `LoadReport`) and the layout (`<root>/<id>.jsonl`, `<root>/<id>/…`).
Does not own: what turns mean (`tether.messages`), when to sync or compact (`tether.agent`).

Typical use::

    store = SessionStore()                       # $TETHER_HOME/sessions or the user data dir
    with store.create(cwd=os.getcwd()) as w:     # header line written
        w.append(turn)                           # one write(2) per entry
        w.sync()                                 # fsync at a turn boundary, when asked
    loaded = store.load(w.id)                    # never rewrites the file
    if not loaded.report.ok:
        print(loaded.report.describe())
"""

from tether.session.layout import (
    ARTIFACT_KINDS,
    TETHER_HOME_ENV,
    ArtifactKind,
    default_root,
    new_id,
    validate_session_id,
    wall_clock_ms,
)
from tether.session.model import (
    EventEntry,
    LoadedSession,
    LoadReport,
    SessionHeader,
    SessionInfo,
    SkippedLine,
)
from tether.session.store import SessionStore
from tether.session.writer import SessionWriter

__all__ = [
    "ARTIFACT_KINDS",
    "TETHER_HOME_ENV",
    "ArtifactKind",
    "EventEntry",
    "LoadReport",
    "LoadedSession",
    "SessionHeader",
    "SessionInfo",
    "SessionStore",
    "SessionWriter",
    "SkippedLine",
    "default_root",
    "new_id",
    "validate_session_id",
    "wall_clock_ms",
]
