"""Protobuf, gRPC, and the in-process and emulated links.

* :mod:`.grpc_common`, :mod:`.grpc_server`, :mod:`.grpc_client`, :mod:`.grpc_calls` —
  **the only grpc importers**: the shared generated stubs, ``ErrorCode`` to gRPC
  status-code maps, message-size options and the client channels' reconnect backoff
  (100 ms growing to 1 s); the servicer (auth, TLS, size limits,
  undecodable requests), ``start_server``; the ``RemoteVerifier`` client;
  a client call's failure as a ``RequestError`` (a ``CANCELLED`` the server cut it with:
  ``UNAVAILABLE``) and a unary call's answer waited for until a cancel event;
* :mod:`.server_thread` — ``ServerThread``: a server on its own event loop in a background
  thread (the calibration's and reproductions' in-process servers, tests, benchmarks);
* :mod:`.tls_probe` — ``speaks_tls``: one TLS handshake of the client's own when a
  plaintext client's connection was closed (``Socket closed``), so that a TLS server is
  named at once (``plaintext_refused``), not retried;
* :mod:`.drafter_clients` — ``drafter_clients``: the clients of an edge drafter's servers
  from its config, each close within ``CLOSE_TIMEOUT_S`` (2 s);
* :mod:`.codec`, :mod:`.fused_codec`, :mod:`.draft_probs`, :mod:`.payloads`,
  :mod:`.logprob_codec`, :mod:`.requests`, :mod:`.health_codec` — protobuf to runtime
  records (protobuf only, no grpc): verify calls and replies (a reply's committed tokens'
  log-probabilities), fused-run records (``HistorySnapshot``, ``FusedCall``,
  ``FusedRound``), the compact draft distribution (held compact: ``CompactProbs``), a verify
  call's named arrays (payloads, draft hidden states), undecodable requests and a Generate
  request's mode, a Health reply (``ServerHealth``);
* :mod:`.inprocess` — ``LocalVerifier``, ``speculative_generate``, ``target_greedy_decode``:
  the same rounds without gRPC;
* :mod:`.emulated_link` — ``EmulatedLinkVerifier``: a chosen RTT, jitter and bandwidth on
  loopback, the simulator's link model, charging :mod:`.link_bytes`' message sizes;
* :mod:`.ports` — ``ensure_port_free``: whether ``host:port`` can be listened on, checked
  before a server loads its model;
* :mod:`.stream_deadline` — ``ChunkDeadline``: a streaming call cancelled when a chunk
  its client waits for does not come within the request timeout (no grpc: it is handed
  the call's ``cancel``);
* :mod:`.reply_size` — ``check_first_reply``: a session whose first reply (its prompt's
  hidden rows, its prompt's log-probabilities) could exceed ``max_message_bytes``, refused
  at ``OpenSession`` or a centralized ``Generate``;
* :mod:`.grpc_limits` — the gRPC server's connection bounds (handshake and idle timeouts,
  ``max_connections``, streams per connection) and ``ensure_fd_room`` (the open-file limit
  raised for them: by the serving command, not ``start_server``).
"""
