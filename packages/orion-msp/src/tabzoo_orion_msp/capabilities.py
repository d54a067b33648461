"""What ORION-MSP claims; plugin.py and conformance.py both import it, neither imports the other."""

from __future__ import annotations

from tabzoo.testing import capabilities as cap

CAPABILITIES = (cap.IN_CONTEXT_DEFAULTS - {cap.BATCH_INDEPENDENCE}) | {cap.LINEAR_IN_FEATURES, cap.MISSING_VALUES}
