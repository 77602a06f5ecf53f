"""``policy-check consumer``: FlashInfer's user contract checked in the code that calls it (docs/consumer.rst)."""
