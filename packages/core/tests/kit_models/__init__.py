"""The conformance kit's gallery of tiny models (test support; NOT shipped in the wheel).

One correct model per protocol and one deliberately broken model per property the kit checks
(:mod:`kit_models.broken`, :mod:`kit_models.broken_v2`, :mod:`kit_models.broken_rows`, ...).
The kit's meta-tests in ``packages/core/tests`` import them as ``kit_models.<module>``; a property
that none of them breaks is a property the kit has not shown it can check.
"""
