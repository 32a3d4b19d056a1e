"""Model names, GGUF files (`gguf_file`: what makes one, its stop ids), loading (torch imported
lazily; `library_output`: the libraries' progress bars and warnings silenced meanwhile) and
the trimmed-vocabulary draft."""
