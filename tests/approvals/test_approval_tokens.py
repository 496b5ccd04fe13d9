import pytest

from chatgate.approvals.tokens import ApprovalSigner, approval_scope, canonical_arguments, is_canonical_token


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


SIGNER = ApprovalSigner(b"k" * 32)
FULL_WIDTH_ZERO = "\uff10"


def test_a_token_verifies_for_the_call_it_was_made_for() -> None:
    token = SIGNER.token("ops", "call_1", "delete_file", '{"path": "/tmp/x"}')
    assert is_canonical_token(token)
    assert SIGNER.verify(token, "ops", "call_1", "delete_file", {"path": "/tmp/x"})  # parsed or text, same call


def test_any_change_to_the_call_or_the_agent_breaks_the_token() -> None:
    token = SIGNER.token("ops", "call_1", "delete_file", '{"path": "/tmp/x"}')
    assert not SIGNER.verify(token, "other", "call_1", "delete_file", '{"path": "/tmp/x"}')
    assert not SIGNER.verify(token, "ops", "call_2", "delete_file", '{"path": "/tmp/x"}')
    assert not SIGNER.verify(token, "ops", "call_1", "read_file", '{"path": "/tmp/x"}')
    assert not SIGNER.verify(token, "ops", "call_1", "delete_file", '{"path": "/etc/passwd"}')
    for forged in ("apr_forged", "apr_zz_abc", "", token.replace("apr_", "xyz_"), token[:-2]):
        assert not SIGNER.verify(forged, "ops", "call_1", "delete_file", '{"path": "/tmp/x"}')


def test_fields_cannot_be_shifted_from_one_into_another() -> None:
    token = SIGNER.token("ops", "a\x1fb", "c", "{}")
    assert not SIGNER.verify(token, "ops", "a", "b\x1fc", "{}")


def respellings(token: str) -> list[str]:
    _, issued, rest = token.split("_", 2)
    nonce, mac = rest[:22], rest[23:]
    return [
        f"apr_0{issued}_{rest}",
        f"apr_00{issued}_{rest}",
        f"apr_0x{issued}_{rest}",
        f"apr_+{issued}_{rest}",
        f"apr_ {issued}_{rest}",
        f"apr_{issued} _{rest}",
        f"apr_{issued.upper()}_{rest}",
        f"apr_{issued}_{rest}=",
        f"apr_{issued}_{nonce}==_{mac}",  # the nonce padded
        f"apr_{issued}_{rest}\n",
        f" {token}",
        f"APR_{issued}_{rest}",
        f"apr_{issued}__{rest}",
        f"apr_{issued}_{nonce}__{mac}",
        f"apr_{issued}_{mac}",  # the nonce left out
        f"apr_{FULL_WIDTH_ZERO}{issued}_{rest}",  # int(..., 16) accepts it
        token.replace("_", "%5F"),  # URL-encoded
    ]


def test_only_the_one_canonical_spelling_verifies() -> None:
    clock = Clock()
    clock.now = 0x6A0B1C2D  # the hex has letters, so upper-casing changes it
    signer = ApprovalSigner(b"k" * 32, clock=clock)
    token = signer.token("ops", "c", "t", "{}")
    assert signer.verify(token, "ops", "c", "t", "{}")
    for spelling in respellings(token):
        assert spelling != token
        assert not is_canonical_token(spelling), spelling
        assert not signer.verify(spelling, "ops", "c", "t", "{}"), spelling
    # Base64url is case-sensitive: another case is a well-formed token that does not verify.
    nonce, mac = token.split("_", 2)[2][:22], token.split("_", 2)[2][23:]
    issued = token.split("_")[1]
    for spelling in (f"apr_{issued}_{nonce.swapcase()}_{mac}", f"apr_{issued}_{nonce}_{mac.swapcase()}"):
        assert not signer.verify(spelling, "ops", "c", "t", "{}"), spelling


def test_two_identical_calls_in_the_same_second_get_different_tokens() -> None:
    signer = ApprovalSigner(b"k" * 32, clock=Clock())  # the clock stands still: one issue second
    first, second = (signer.token("ops", "call_1", "t", '{"a": 1}') for _ in range(2))
    assert first != second and first.split("_")[1] == second.split("_")[1]
    assert signer.verify(first, "ops", "call_1", "t", '{"a": 1}')
    assert signer.verify(second, "ops", "call_1", "t", '{"a": 1}')


def test_a_token_verifies_in_its_own_scope_only() -> None:
    mine, theirs = approval_scope("ops", "key-a"), approval_scope("ops", "key-b")
    token = SIGNER.token("ops", "c", "t", "{}", scope=mine)
    assert SIGNER.verify(token, "ops", "c", "t", "{}", scope=mine)
    for other in (theirs, approval_scope("ops", "key-a", "thr_1"), approval_scope("ops", "key-a/user"), ""):
        assert not SIGNER.verify(token, "ops", "c", "t", "{}", scope=other), other


def test_another_servers_secret_does_not_verify() -> None:
    token = ApprovalSigner(b"a" * 32).token("ops", "c", "t", "{}")
    assert not ApprovalSigner(b"b" * 32).verify(token, "ops", "c", "t", "{}")


def test_a_token_expires_and_its_issue_time_cannot_be_moved() -> None:
    clock = Clock()
    signer = ApprovalSigner(b"k" * 32, ttl=60, clock=clock)
    token = signer.token("ops", "c", "t", "{}")
    clock.now += 59
    assert signer.verify(token, "ops", "c", "t", "{}")
    clock.now += 2
    assert not signer.verify(token, "ops", "c", "t", "{}")
    rest = token.split("_", 2)[2]
    refreshed = f"apr_{int(clock.now):x}_{rest}"
    assert not signer.verify(refreshed, "ops", "c", "t", "{}")


@pytest.mark.parametrize(
    "arguments",
    ['{"path": "\\ud800"}', '{"path": "\ud800"}', "\udfff not json", {"k": "\ud800"}, "[" * 100_000],
    ids=["escaped", "raw", "raw-not-json", "parsed", "deep"],
)
def test_arguments_a_client_can_send_never_break_signing(arguments: object) -> None:
    token = SIGNER.token("ops", "c\ud800", "t", arguments)
    assert SIGNER.verify(token, "ops", "c\ud800", "t", arguments)
    assert not SIGNER.verify(token, "ops", "c\ud800", "t", "{}")
    assert canonical_arguments(arguments).isascii()


def test_tokens_of_any_type_are_refused_without_raising() -> None:
    for token in (None, 42, b"apr_1_x", ["apr"], "\ud800"):
        assert not is_canonical_token(token)
        assert not SIGNER.verify(token, "ops", "c", "t", "{}")  # type: ignore[arg-type]


def test_canonical_arguments_ignore_spacing_and_key_order() -> None:
    assert canonical_arguments('{"b": 1, "a": [1, 2]}') == canonical_arguments({"a": [1, 2], "b": 1})
    assert canonical_arguments("") == "{}"
    assert canonical_arguments("not json") != canonical_arguments('"not json"')
