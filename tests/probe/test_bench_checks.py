"""bench's options refused before anything starts: the Ray address's form, the backend."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from probe.checks.bench_checks import COMPILE_BACKENDS, check_compile_backend, check_ray_address
from probe.common.errors import BadInput

ports = st.integers(1, 65535)


@given(ip=st.ip_addresses(v=4), port=ports, scheme=st.sampled_from(["", "ray://"]))
def test_every_ipv4_address_with_a_port_is_accepted(ip, port, scheme):
    address = f"{scheme}{ip}:{port}"
    assert check_ray_address(address) == address


@given(ip=st.ip_addresses(v=6), port=ports)
def test_ipv6_in_brackets_is_accepted(ip, port):
    assert check_ray_address(f"[{ip}]:{port}")


@given(octets=st.lists(st.integers(0, 999), min_size=4, max_size=4).filter(
    lambda o: max(o) > 255), port=ports)
def test_an_octet_over_255_is_refused(octets, port):
    with pytest.raises(BadInput, match="is not an IPv4 address"):
        check_ray_address(f"{'.'.join(map(str, octets))}:{port}")


@pytest.mark.parametrize("address", ["host:0", "host:65536", "host:-1", "host:", "host:x",
                                     "host", "ray://", ":6379", "a b:1", "[::1:1"])
def test_malformed_addresses_are_one_line(address):
    with pytest.raises(BadInput) as refused:
        check_ray_address(address)
    assert str(refused.value).startswith(f"--ray {address!r}: not a Ray address: ")
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("address", ["local", "auto", "head-node:6379", "ray://head.lan:10001"])
def test_words_and_host_names(address):
    assert check_ray_address(address) == address


def test_backends():
    for name in COMPILE_BACKENDS:
        assert check_compile_backend(name) == name
    with pytest.raises(BadInput, match="choose one of inductor"):
        check_compile_backend("Inductor")
