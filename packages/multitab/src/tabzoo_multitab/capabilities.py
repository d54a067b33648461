"""What MultiTab-Net claims; plugin.py and conformance.py both import it, neither imports the other."""

from __future__ import annotations

from tabzoo.testing import capabilities as cap

CAPABILITIES = cap.ROW_ATTENTION_DEFAULTS | cap.MULTITASK_DEFAULTS | {cap.QUERY_INDEPENDENCE, cap.INDEPENDENT_TASKS}
