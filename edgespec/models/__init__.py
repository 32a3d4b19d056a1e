"""Model names, GGUF files (`gguf_file`: what makes one, its stop ids; `gemma_cache`: the
bundled Gemma's fp32 and tokenizer copies, made from the GGUF that `edgespec.bundled_gguf`
assembles into the cache folder), loading (torch imported
lazily; `library_output`: the libraries' progress bars and warnings silenced meanwhile) and
the trimmed-vocabulary draft."""
