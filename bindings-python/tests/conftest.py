import pytest

import laneway
from laneway.testing import Emulator


@pytest.fixture(scope="session")
def emulator():
    with Emulator(scenario="fast") as emu:
        yield emu


@pytest.fixture
def router(emulator):
    return laneway.Router(**emulator.router_kwargs())
