"""What NPT claims; plugin.py and conformance.py both import it, neither imports the other."""

from __future__ import annotations

from tabzoo.testing import capabilities as cap

CAPABILITIES = (cap.ROW_ATTENTION_DEFAULTS - {cap.BATCH_INDEPENDENCE}) | {cap.QUERY_INDEPENDENCE, cap.CONTEXT_ORDER_INVARIANCE}
