from app.approvals import ApprovalSigner, canonical_arguments


def test_a_token_verifies_for_the_call_it_was_made_for() -> None:
    signer = ApprovalSigner(b"k" * 32)
    token = signer.token("call_1", "delete_file", '{"path": "/tmp/x"}')
    assert token.startswith("apr_")
    assert signer.verify(token, "call_1", "delete_file", {"path": "/tmp/x"})  # parsed or text, same call


def test_any_change_to_the_call_breaks_the_token() -> None:
    signer = ApprovalSigner(b"k" * 32)
    token = signer.token("call_1", "delete_file", '{"path": "/tmp/x"}')
    assert not signer.verify(token, "call_2", "delete_file", '{"path": "/tmp/x"}')
    assert not signer.verify(token, "call_1", "read_file", '{"path": "/tmp/x"}')
    assert not signer.verify(token, "call_1", "delete_file", '{"path": "/etc/passwd"}')
    assert not signer.verify("apr_forged", "call_1", "delete_file", '{"path": "/tmp/x"}')


def test_another_servers_secret_does_not_verify() -> None:
    token = ApprovalSigner(b"a" * 32).token("c", "t", "{}")
    assert not ApprovalSigner(b"b" * 32).verify(token, "c", "t", "{}")


def test_canonical_arguments_ignore_spacing_and_key_order() -> None:
    assert canonical_arguments('{"b": 1, "a": [1, 2]}') == canonical_arguments({"a": [1, 2], "b": 1})
    assert canonical_arguments("") == "{}"
    assert canonical_arguments("not json") == "not json"
