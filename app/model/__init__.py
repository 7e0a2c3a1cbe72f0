"""The arithmetic of speculative decoding: pure numpy and scipy, no web framework."""
