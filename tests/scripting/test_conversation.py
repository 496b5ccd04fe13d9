from chatgate.history import AssistantMessage, SystemMessage, TextPart, UserMessage
from chatgate.scripting.conversation import KEEP, Conversation

HI = UserMessage((TextPart("hi"),), id="u1")
HELLO = AssistantMessage((TextPart("hello"),), id="a1")
AGAIN = UserMessage((TextPart("again"),), id="u2")


def texts(conversation: Conversation) -> list[str]:
    return [m.content if isinstance(m, SystemMessage) else m.text for m in conversation.messages]


def test_seed_stores_the_system_message_and_places_it_first_on_the_first_turn() -> None:
    conversation = Conversation()
    conversation.system_message = "You are terse."
    assert conversation.messages == ()
    conversation.add(HI)
    assert texts(conversation) == ["You are terse.", "hi"]


def test_swap_rewrites_the_system_entry_in_place_and_keeps_the_history() -> None:
    conversation = Conversation("You are terse.", [HI, HELLO])
    system_id = conversation.messages[0].id
    conversation.system_message = "You are a pirate."
    assert texts(conversation) == ["You are a pirate.", "hi", "hello"]
    assert conversation.messages[0].id == system_id
    conversation.add(AGAIN)
    assert texts(conversation) == ["You are a pirate.", "hi", "hello", "again"]


def test_swap_inserts_a_system_entry_when_there_was_none_and_removes_it_on_none() -> None:
    conversation = Conversation(None, [HI, HELLO])
    conversation.system_message = "Now with rules."
    assert texts(conversation) == ["Now with rules.", "hi", "hello"]
    conversation.system_message = None
    assert texts(conversation) == ["hi", "hello"]
    assert conversation.system_message is None


def test_reset_keeps_clears_or_replaces_the_system_message() -> None:
    kept = Conversation("Keep me.", [HI, HELLO])
    kept.reset()
    assert (kept.messages, kept.system_message) == ((), "Keep me.")
    kept.add(AGAIN)
    assert texts(kept) == ["Keep me.", "again"]

    cleared = Conversation("Gone.", [HI])
    cleared.reset(system_message=None)
    cleared.add(AGAIN)
    assert (texts(cleared), cleared.system_message) == (["again"], None)

    replaced = Conversation("Old.", [HI])
    replaced.reset(system_message="New.")
    replaced.add(AGAIN)
    assert texts(replaced) == ["New.", "again"]


def test_keep_is_a_sentinel_no_prompt_text_can_collide_with() -> None:
    conversation = Conversation("Original.", [HI])
    conversation.reset(system_message="KEEP")
    assert conversation.system_message == "KEEP"
    conversation.reset(system_message=KEEP)
    assert conversation.system_message == "KEEP"


def test_a_history_that_brings_its_own_system_message_is_not_given_a_second() -> None:
    conversation = Conversation("Seeded.", [SystemMessage("Client's.", id="s0"), HI])
    assert texts(conversation) == ["Client's.", "hi"]
