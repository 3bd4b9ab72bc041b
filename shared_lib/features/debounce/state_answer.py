"""An answer to a pending confirmation is never gathered (seed 000 §5.1.6 over seed 001 §7.3).

「はい」 to 「…送信してよいウル？」 followed within the window by another message must answer the
question, at once, and the next message must be a request of its own. Whether a message is such
an answer is decided **once, at the ingress**, and written on its buffer entry (``prompt``,
``state.append``), because every turn of the burst must see the same fact: the turns of the
messages before and after it (absorbed or not, claiming back to where) read it from the buffer,
and a pending state read again by each of them at another moment (the question asked, answered
or expired between two looks) could absorb an earlier message into a turn that then answers
alone, and lose it.

The cost stays off the common path: the policy's reader (``read_answer(text,
rt.policy.confirmation)``, pure) runs first, and only a text that reads as a yes or a no (or a
choice number, an approval id with one) costs one read, the conversation's session document
(``load_session``: a pending action that has not expired). Nothing else on the ingress's
path changes; the context layer's debounce step then needs no session read at all for it.
"""

from __future__ import annotations

from datetime import datetime

from shared_lib.policy.config import Confirmation
from shared_lib.ports import Store
from shared_lib.state.answers import read_answer
from shared_lib.state.session import load_session


def answers_pending(
    store: Store, org_id: str, conversation_key: str, text: str, confirmation: Confirmation, now: datetime
) -> bool:
    """Whether ``text`` answers a confirmation pending in its conversation at ``now``."""
    if read_answer(text, confirmation).kind == "other":
        return False
    return bool(load_session(store, org_id, conversation_key, now).get("pending_actions"))
