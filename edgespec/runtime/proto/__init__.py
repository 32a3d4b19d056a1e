"""The protocol, ``edgespec.v1.Verification``: ``edgespec.proto`` (every field commented;
the reference docs/RUNTIME.md points to) and the committed generated stubs
``edgespec_pb2.py`` / ``edgespec_pb2_grpc.py`` (regenerated with ``grpc_tools.protoc``, as the
proto file's header says).
"""
