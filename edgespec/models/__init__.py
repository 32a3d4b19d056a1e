"""Model names, GGUF files (`gguf_file`: what makes one, its stop ids), loading (torch imported
lazily) and the trimmed-vocabulary draft."""
