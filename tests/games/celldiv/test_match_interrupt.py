"""Ctrl-C in the match runner: the finished games come back in ``Interrupted``; a game is never half recorded."""

import signal

import pytest

from games.celldiv.match import play_match
from games.celldiv.players import make_player
from games.league import Interrupted, hold_interrupts


def test_ctrl_c_returns_the_tally_of_the_finished_games():
    made = []

    def stopper(seed):
        made.append(seed)
        player = make_player("random", seed)
        if len(made) == 4:  # made once for its name, then per game: game 2 presses Ctrl-C at its first move
            player.choose = lambda state: (_ for _ in ()).throw(KeyboardInterrupt())
        return player

    with pytest.raises(Interrupted) as e:
        play_match("easy", stopper, games=10, sizes="4", seed=3)
    tally = e.value.partial
    assert e.value.tally is tally and tally.games == 2 and len(tally.margins) == 2
    assert isinstance(e.value, KeyboardInterrupt)  # callers that do not care see Ctrl-C as always


def test_a_held_interrupt_arrives_after_the_block(in_a_clean_process):
    if not in_a_clean_process:
        return
    done = []
    with pytest.raises(KeyboardInterrupt):
        with hold_interrupts():
            signal.raise_signal(signal.SIGINT)
            done.append("recorded")  # still runs: the interrupt waits
    assert done == ["recorded"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler is back
