"""UI protocol adapters, one module each: ``ag_ui`` (AG-UI 1.0) and ``vercel_ai`` (AI SDK useChat).

Each exposes a ``protocol`` object implementing ``chatgate.protocol.UIProtocol`` and registered under the
``chatgate.protocols`` entry-point group.
"""
