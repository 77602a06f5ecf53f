"""What the model implies: what runs at import time, and which bytes can matter (the prefilter)."""
