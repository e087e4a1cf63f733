"""tnlib.planning.pddl's compressed problem files: a ``.gz`` problem reads as the text it holds, everywhere a
problem is read, its bytes are the same on every write, and a damaged one is one error that names it."""
from __future__ import annotations

import gzip

import pytest

from tnlib.errors import DamagedFile, TaskError
from tnlib.planning.generators import generate
from tnlib.planning.pddl import (
    is_compressed, pddl_file_bytes, pddl_stem, problem_atoms, read_pddl_text,
)
from tnlib.planning.task import load_task


@pytest.fixture
def ferry_files(tmp_path):
    """One ferry problem stored both ways: (its text, the plain file, the compressed file)."""
    text = generate("ferry", 11, locations=5, cars=3)
    plain, packed = tmp_path / "ferry.pddl", tmp_path / "ferry.pddl.gz"
    plain.write_bytes(pddl_file_bytes(text, compressed=False))
    packed.write_bytes(pddl_file_bytes(text, compressed=True))
    return text, plain, packed


def test_a_compressed_problem_reads_as_the_text_it_holds(ferry_files):
    text, plain, packed = ferry_files
    assert not is_compressed(plain) and is_compressed(packed)
    assert plain.read_text() == text and packed.read_bytes()[:2] == b"\x1f\x8b"  # gzip's magic number
    assert read_pddl_text(packed) == read_pddl_text(plain) == text
    assert gzip.decompress(packed.read_bytes()).decode() == text  # any gzip reader gets the PDDL back


def test_a_compressed_problem_gives_the_task_and_atoms_of_its_plain_file(ferry_files):
    _text, plain, packed = ferry_files
    a, b = load_task("ferry", plain), load_task("ferry", packed)
    assert a.fact_names == b.fact_names and a.operator_names == b.operator_names
    assert a.init == b.init and list(a.goal) == list(b.goal)
    assert problem_atoms("ferry", packed) == problem_atoms("ferry", plain)


def test_compressed_bytes_are_the_same_on_every_write(ferry_files, tmp_path):
    text, _plain, packed = ferry_files
    again = tmp_path / "again.pddl.gz"
    again.write_bytes(pddl_file_bytes(text, compressed=True))
    assert again.read_bytes() == packed.read_bytes()
    header = packed.read_bytes()[:10]
    assert header[3] == 0  # no flags: no file name, no comment in the header
    assert header[4:8] == b"\0\0\0\0"  # modification time 0
    assert pddl_file_bytes(text + " ", compressed=True) != packed.read_bytes()  # the bytes follow the text
    assert len(packed.read_bytes()) < len(text.encode()) / 2


def test_a_damaged_compressed_problem_is_an_error_that_names_it(ferry_files):
    _text, _plain, packed = ferry_files
    data = packed.read_bytes()
    packed.write_bytes(data[: len(data) // 2])
    with pytest.raises(DamagedFile, match="cut short") as raised:
        read_pddl_text(packed)
    assert raised.value.path == packed
    with pytest.raises(TaskError, match=f"{packed}: cannot read problem file .*cut short"):
        load_task("ferry", packed)
    changed = bytearray(data)
    changed[-6] ^= 0xFF  # the CRC: the deflate stream still decodes, only the checksum tells
    packed.write_bytes(bytes(changed))
    with pytest.raises(TaskError, match="not a whole gzip stream"):
        load_task("ferry", packed)


def test_a_problem_name_is_its_file_name_without_the_suffixes():
    assert pddl_stem("data/ferry-l30-c30-s1.pddl.gz") == pddl_stem("ferry-l30-c30-s1.pddl") == "ferry-l30-c30-s1"
    assert pddl_stem("notes.txt") == "notes"
