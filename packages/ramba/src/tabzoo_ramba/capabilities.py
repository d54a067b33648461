"""What Ramba claims; plugin.py and conformance.py both import it, neither imports the other."""

from __future__ import annotations

from tabzoo.testing import capabilities as cap

CAPABILITIES = cap.RELATIONAL_DEFAULTS | {cap.LINEAR_IN_SEQUENCE}
