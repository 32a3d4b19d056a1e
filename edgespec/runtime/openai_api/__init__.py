"""An OpenAI-compatible HTTP endpoint on the edge drafter (``edgespec draft --serve-openai``).

``/v1/completions``, ``/v1/chat/completions`` (``stream: true`` as server-sent events) and
``/v1/models``; every request runs distributed speculative decoding against the
verification server(s). :mod:`.schema` parses and checks requests, :mod:`.generation`
runs one in a worker thread, :mod:`.streaming` turns it into SSE chunks, :mod:`.errors`
maps failures to OpenAI error bodies, :mod:`.app` holds the routes and :mod:`.serve` starts
uvicorn from ``edgespec draft``.
"""
