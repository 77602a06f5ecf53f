"""``policy-check consumer``: check FlashInfer's user contract in the code that calls it.

docs/consumer.rst describes it.
"""
