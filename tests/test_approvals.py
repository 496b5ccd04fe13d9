from chatgate.approvals import ApprovalSigner, canonical_arguments


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_a_token_verifies_for_the_call_it_was_made_for() -> None:
    signer: ApprovalSigner[str] = ApprovalSigner(b"k" * 32)
    token = signer.token("call_1", "delete_file", '{"path": "/tmp/x"}')
    assert token.startswith("apr_")
    assert signer.verify(token, "call_1", "delete_file", {"path": "/tmp/x"})  # parsed or text, same call


def test_any_change_to_the_call_breaks_the_token() -> None:
    signer: ApprovalSigner[str] = ApprovalSigner(b"k" * 32)
    token = signer.token("call_1", "delete_file", '{"path": "/tmp/x"}')
    assert not signer.verify(token, "call_2", "delete_file", '{"path": "/tmp/x"}')
    assert not signer.verify(token, "call_1", "read_file", '{"path": "/tmp/x"}')
    assert not signer.verify(token, "call_1", "delete_file", '{"path": "/etc/passwd"}')
    for forged in ("apr_forged", "apr_zz_abc", "", token.replace("apr_", "xyz_"), token[:-2]):
        assert not signer.verify(forged, "call_1", "delete_file", '{"path": "/tmp/x"}')


def test_another_servers_secret_does_not_verify() -> None:
    token = ApprovalSigner[str](b"a" * 32).token("c", "t", "{}")
    assert not ApprovalSigner[str](b"b" * 32).verify(token, "c", "t", "{}")


def test_a_token_expires_and_its_issue_time_cannot_be_moved() -> None:
    clock = Clock()
    signer: ApprovalSigner[str] = ApprovalSigner(b"k" * 32, ttl=60, clock=clock)
    token = signer.token("c", "t", "{}")
    clock.now += 59
    assert signer.verify(token, "c", "t", "{}")
    clock.now += 2
    assert not signer.verify(token, "c", "t", "{}")
    mac = token.split("_", 2)[2]
    refreshed = f"apr_{int(clock.now):x}_{mac}"
    assert not signer.verify(refreshed, "c", "t", "{}")


def test_a_settled_token_is_remembered_until_it_expires() -> None:
    clock = Clock()
    signer: ApprovalSigner[str] = ApprovalSigner(b"k" * 32, ttl=60, clock=clock)
    token = signer.token("c", "t", "{}")
    assert signer.settled(token) is None
    signer.settle(token, "ran once")
    assert signer.settled(token) == "ran once"
    clock.now += 61
    assert signer.settled(token) is None


def test_canonical_arguments_ignore_spacing_and_key_order() -> None:
    assert canonical_arguments('{"b": 1, "a": [1, 2]}') == canonical_arguments({"a": [1, 2], "b": 1})
    assert canonical_arguments("") == "{}"
    assert canonical_arguments("not json") == "not json"
