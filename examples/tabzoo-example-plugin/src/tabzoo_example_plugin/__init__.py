"""tabzoo-example-plugin: a kNN-style attention in-context classifier, as a third-party tabzoo plugin.

The model lives in :mod:`tabzoo_example_plugin.model`; :mod:`tabzoo_example_plugin.plugin` holds
its config and registration, :mod:`tabzoo_example_plugin.estimators` the scikit-learn
estimator (the core's in-context path around the model) and :mod:`tabzoo_example_plugin.conformance`
the conformance case.
"""

__version__ = "0.1.0"
