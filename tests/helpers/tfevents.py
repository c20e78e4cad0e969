"""TensorBoard's event files read back without tensorboard: the TFRecord framing (each record's length and body CRC-checked
with masked CRC-32C, as tensorboard/summary/writer/record_writer.py writes them) and the protobuf fields of Event and
Summary (tensorboard/compat/proto/event.proto, summary.proto). One reader for the simulated trainer's files and the NPU
sampler's; its CRC is written here, apart from both writers'."""
from __future__ import annotations

import struct


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _bit in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked(data):
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def records(data):
    """The TFRecord records of a file's bytes, each CRC checked."""
    found, at = [], 0
    while at < len(data):
        length = data[at:at + 8]
        (size,) = struct.unpack("<Q", length)
        assert struct.unpack("<I", data[at + 8:at + 12])[0] == masked(length)
        body = data[at + 12:at + 12 + size]
        assert struct.unpack("<I", data[at + 12 + size:at + 16 + size])[0] == masked(body)
        found.append(body)
        at += 16 + size
    return found


def varint(data, at):
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at


def fields(data):
    """{field number: [values]} of a protobuf message (varint, fixed64, length-delimited, fixed32)."""
    found, at = {}, 0
    while at < len(data):
        key, at = varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = varint(data, at)
        elif wire == 1:
            value, at = data[at:at + 8], at + 8
        elif wire == 5:
            value, at = data[at:at + 4], at + 4
        else:
            size, at = varint(data, at)
            value, at = data[at:at + size], at + size
        found.setdefault(number, []).append(value)
    return found


def scalars(summary):
    """{tag: value} of a Summary's simple values."""
    values = {}
    for value in fields(summary).get(1, []):
        value = fields(value)
        values[value[1][0].decode()] = struct.unpack("<f", value[2][0])[0]
    return values
