"""edgespec: distributed speculative decoding for edge-cloud LLM serving."""

__version__ = "0.1.0"
