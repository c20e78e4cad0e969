# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Private to the verl.deploy collection: may change without notice.
"""A parquet file's schema and row count from its footer, in pure Python (the hosts have no pyarrow), and the rules
verl v0.7.0's dataset and reward code put on a training data set.

The footer (Apache Parquet format, parquet.thrift): ... <FileMetaData, Thrift compact protocol> <its length, 4 bytes
little-endian> "PAR1". FileMetaData: 1 version, 2 schema (list<SchemaElement>, the tree flattened depth first, each
group with num_children), 3 num_rows. SchemaElement: 1 type, 3 repetition_type, 4 name, 5 num_children,
6 converted_type, 10 logicalType. Only these are interpreted; every other field is skipped by its wire type.

What verl reads (verl/utils/dataset/rl_dataset.py RLHFDataset, verl/workers/reward_manager): the prompt column
(data.prompt_key, "prompt") as chat messages, a list of {role, content}, given to the tokenizer's chat template;
reward_model.ground_truth and data_source for the reward; the train dataloader drops the last partial batch
(drop_last=True), so fewer rows than data.train_batch_size give no step at all.
No Ansible imports.
"""
from __future__ import annotations

import struct
import zlib

MAGIC = b"PAR1"
FOOTER_MAX = 64 * 1024 * 1024
# parquet.thrift enums
TYPES = {0: "boolean", 1: "int32", 2: "int64", 3: "int96", 4: "float", 5: "double", 6: "binary", 7: "fixed_len_byte_array"}
OPTIONAL, REPEATED = 1, 2
BYTE_ARRAY = 6
CONVERTED_UTF8, CONVERTED_MAP, CONVERTED_MAP_KEY_VALUE, CONVERTED_LIST = 0, 1, 2, 3
# LogicalType union members (field ids): 1 STRING, 2 MAP, 3 LIST.
LOGICAL_STRING, LOGICAL_MAP, LOGICAL_LIST = 1, 2, 3


class ParquetError(ValueError):
    """The file is not a parquet file this reader understands; the message says why."""


# --------------------------------------------------------------------------- Thrift compact protocol

class _Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def byte(self):
        if self.pos >= len(self.data):
            raise ParquetError("the footer ends early")
        value = self.data[self.pos]
        self.pos += 1
        return value

    def take(self, count):
        if count < 0 or self.pos + count > len(self.data):
            raise ParquetError("the footer ends early")
        chunk = self.data[self.pos:self.pos + count]
        self.pos += count
        return chunk

    def varint(self):
        shift = result = 0
        while True:
            byte = self.byte()
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return result
            shift += 7
            if shift > 70:
                raise ParquetError("a varint is too long")

    def zigzag(self):
        value = self.varint()
        return (value >> 1) ^ -(value & 1)

    def value(self, kind, depth=0):
        if depth > 64:
            raise ParquetError("the footer nests too deep")
        if kind in (1, 2):  # a boolean inside a list is one byte
            return self.byte() == 1
        if kind == 3:
            return struct.unpack("b", self.take(1))[0]
        if kind in (4, 5, 6):
            return self.zigzag()
        if kind == 7:
            return struct.unpack("<d", self.take(8))[0]
        if kind == 8:
            return self.take(self.varint())
        if kind in (9, 10):
            header = self.byte()
            size, element = header >> 4, header & 0x0F
            if size == 15:
                size = self.varint()
            return [self.value(element, depth + 1) for _index in range(size)]
        if kind == 11:
            size = self.varint()
            if not size:
                return {}
            types = self.byte()
            return dict((self.value(types >> 4, depth + 1), self.value(types & 0x0F, depth + 1)) for _index in range(size))
        if kind == 12:
            return self.struct(depth + 1)
        raise ParquetError("unknown Thrift compact type %d" % kind)

    def struct(self, depth=0):
        """{field id: value}; a boolean field's value is in its type nibble (1 true, 2 false)."""
        fields, last = {}, 0
        while True:
            header = self.byte()
            if header == 0:
                return fields
            delta, kind = header >> 4, header & 0x0F
            field = last + delta if delta else self.zigzag()
            fields[field] = (kind == 1) if kind in (1, 2) else self.value(kind, depth)
            last = field


def footer(data):
    """The FileMetaData struct ({field id: value}) of a parquet file's bytes, or of its tail that holds the footer."""
    if len(data) < 12 or data[-4:] != MAGIC:
        raise ParquetError("it does not end with the parquet magic PAR1 (not a parquet file, or cut short)")
    length = struct.unpack("<I", data[-8:-4])[0]
    if length + 8 > len(data):
        raise ParquetError("its footer length %d is more than the file holds" % length)
    return _Reader(data[-8 - length:-8]).struct()


def read_tail(path):
    """The bytes of a parquet file's footer and what follows it, read from the end (no more than the footer)."""
    with open(path, "rb") as handle:
        handle.seek(0, 2)
        size = handle.tell()
        if size < 12:
            raise ParquetError("it has %d bytes, fewer than any parquet file" % size)
        handle.seek(0)
        if handle.read(4) != MAGIC:
            raise ParquetError("it does not start with the parquet magic PAR1 (not a parquet file)")
        handle.seek(size - 8)
        tail = handle.read(8)
        length = struct.unpack("<I", tail[:4])[0]
        if tail[4:] != MAGIC:
            raise ParquetError("it does not end with the parquet magic PAR1 (not a parquet file, or cut short)")
        if length > FOOTER_MAX or length + 12 > size:
            raise ParquetError("its footer length %d does not fit the file of %d bytes" % (length, size))
        handle.seek(size - 8 - length)
        return handle.read(length + 8)


# --------------------------------------------------------------------------- the schema

def _name(element):
    name = element.get(4, b"")
    return name.decode("utf-8", "replace") if isinstance(name, bytes) else str(name)


def _tree(elements, index):
    element = elements[index]
    node = {"name": _name(element), "repeated": element.get(3) == REPEATED, "optional": element.get(3) == OPTIONAL, "children": [],
            "type": TYPES.get(element.get(1)), "converted": element.get(6), "logical": set((element.get(10) or {}).keys())}
    index += 1
    for _child in range(element.get(5) or 0):
        if index >= len(elements):
            raise ParquetError("the schema lists fewer elements than its groups' num_children")
        child, index = _tree(elements, index)
        node["children"].append(child)
    return node, index


def _describe(node):
    """A readable type: string, int64, list<...>, struct<a: ..., b: ...>, map<...>."""
    if not node["children"]:
        if node["type"] == "binary" and (node["converted"] == CONVERTED_UTF8 or LOGICAL_STRING in node["logical"]):
            text = "string"
        else:
            text = node["type"] or "?"
        return "list<%s>" % text if node["repeated"] else text
    if node["converted"] == CONVERTED_LIST or LOGICAL_LIST in node["logical"]:
        # The three-level list: <name> (LIST) -> repeated group "list" -> "element"; the two-level legacy one:
        # <name> (LIST) -> repeated <element>.
        repeated = node["children"][0]
        if repeated["children"] and len(repeated["children"]) == 1:
            inner = repeated["children"][0]  # three-level: <name> -> repeated group list -> element
        else:
            inner = dict(repeated, repeated=False)  # two-level: <name> -> repeated element (a field, or a group of several)
        return "list<%s>" % _describe(inner)
    if node["converted"] in (CONVERTED_MAP, CONVERTED_MAP_KEY_VALUE) or LOGICAL_MAP in node["logical"]:
        pairs = node["children"][0]["children"]
        return "map<%s>" % ", ".join(_describe(dict(child, repeated=False)) for child in pairs)
    text = "struct<%s>" % ", ".join("%s: %s" % (child["name"], _describe(child)) for child in node["children"])
    return "list<%s>" % text if node["repeated"] else text


def _fields(node):
    """{field name: type text} of a struct's (or a list of structs') fields, {} otherwise."""
    text = _describe(node)
    while text.startswith("list<"):
        text = text[len("list<"):-1]
    if not text.startswith("struct<"):
        return {}
    found, depth, start, body = {}, 0, 0, text[len("struct<"):-1]
    parts = []
    for position, char in enumerate(body):
        if char == "<":
            depth += 1
        elif char == ">":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(body[start:position])
            start = position + 1
    parts.append(body[start:])
    for part in parts:
        name, _sep, kind = part.strip().partition(": ")
        found[name] = kind
    return found


def describe(meta):
    """{'num_rows', 'columns': {name: type text}, 'fields': {name: {field: type text}}} of a FileMetaData struct."""
    elements = meta.get(2) or []
    if not elements:
        raise ParquetError("its footer has no schema")
    root, _end = _tree(elements, 0)
    return {"num_rows": meta.get(3), "columns": {child["name"]: _describe(child) for child in root["children"]},
            "fields": {child["name"]: _fields(child) for child in root["children"] if _fields(child)}}


def read_schema(path):
    """describe() of the parquet file at path, or {'error': why} (never raises on a bad file)."""
    try:
        return describe(footer(read_tail(path)))
    except (OSError, ParquetError, struct.error, UnicodeDecodeError) as exc:
        return {"error": str(exc)}


# --------------------------------------------------------------------------- the first rows' values

# Read from the first row group's column chunks (parquet.thrift: RowGroup 1 columns; ColumnChunk 3 meta_data; ColumnMetaData
# 1 type, 3 path_in_schema, 4 codec, 7 total_compressed_size, 9 data_page_offset, 11 dictionary_page_offset; PageHeader 1 type,
# 3 compressed_page_size, 5 data_page_header {1 num_values, 2 encoding}, 7 dictionary_page_header {1 num_values},
# 8 data_page_header_v2 {1 num_values, 5 definition_levels_byte_length, 6 repetition_levels_byte_length, 7 is_compressed}).
# What pyarrow and `datasets` write by default is read: SNAPPY, GZIP or no compression; PLAIN or dictionary encoding; data
# pages v1 and v2. Anything else (ZSTD, a repeated column) is not read, and then nothing is judged.
SAMPLE_ROWS = 256
SAMPLE_BYTES = 32 * 1024 * 1024
CODEC_NONE, CODEC_SNAPPY, CODEC_GZIP = 0, 1, 2
PAGE_DATA, PAGE_DICTIONARY, PAGE_DATA_V2 = 0, 2, 3
ENCODING_PLAIN, ENCODING_PLAIN_DICTIONARY, ENCODING_RLE_DICTIONARY = 0, 2, 8


class Unreadable(ParquetError):
    """A part this reader does not decode (a codec, an encoding): the values are unknown, not wrong."""


def snappy_decompress(data):
    """Snappy's raw format (google/snappy format_description.txt): the length as a varint, then literals and copies."""
    reader = _Reader(data)
    size, out = reader.varint(), bytearray()
    while reader.pos < len(data):
        tag = reader.byte()
        kind = tag & 3
        if kind == 0:
            length = tag >> 2
            if length >= 60:
                length = int.from_bytes(reader.take(length - 59), "little")
            out += reader.take(length + 1)
            continue
        if kind == 1:
            length, offset = 4 + ((tag >> 2) & 7), ((tag >> 5) << 8) | reader.byte()
        else:
            length, offset = (tag >> 2) + 1, int.from_bytes(reader.take(2 if kind == 2 else 4), "little")
        if not 0 < offset <= len(out):
            raise ParquetError("a snappy copy points before the start")
        for _index in range(length):  # copies may overlap what they write
            out.append(out[-offset])
    if len(out) != size:
        raise ParquetError("snappy gave %d bytes, not the %d it announced" % (len(out), size))
    return bytes(out)


def _decompress(codec, data):
    if codec == CODEC_NONE:
        return data
    if codec == CODEC_SNAPPY:
        return snappy_decompress(data)
    if codec == CODEC_GZIP:
        return zlib.decompress(data, 16 + zlib.MAX_WBITS)
    raise Unreadable("compression codec %d is not read" % codec)


def _hybrid(data, width, count):
    """parquet's RLE / bit-packed hybrid encoding: count values of width bits."""
    if width == 0:
        return [0] * count
    reader, out, mask = _Reader(data), [], (1 << width) - 1
    while len(out) < count and reader.pos < len(data):
        header = reader.varint()
        if header & 1:
            groups = header >> 1
            value = int.from_bytes(reader.take(min(groups * width, len(data) - reader.pos)), "little")
            out += [(value >> (index * width)) & mask for index in range(groups * 8)]
        else:
            out += [int.from_bytes(reader.take((width + 7) // 8), "little")] * (header >> 1)
    return out[:count]


def _plain_byte_arrays(data, count):
    reader, out = _Reader(data), []
    for _index in range(count):
        out.append(reader.take(struct.unpack("<I", reader.take(4))[0]))
    return out


def _leaves(node, path=(), max_def=0, repeated=False):
    """{('reward_model', 'ground_truth'): (max definition level, physical type, any repeated on the path)} of the leaves."""
    found = {}
    for child in node["children"]:
        here = path + (child["name"],)
        level = max_def + (1 if child["optional"] or child["repeated"] else 0)
        if child["children"]:
            found.update(_leaves(child, here, level, repeated or child["repeated"]))
        else:
            found[here] = (level, child["type"], repeated or child["repeated"])
    return found


def _chunk_values(handle, chunk, max_def, limit):
    """The first `limit` values of a column chunk (bytes, None for a null)."""
    start = chunk.get(11) or chunk.get(9) or 0
    handle.seek(start)
    data = handle.read(min(chunk.get(7) or 0, SAMPLE_BYTES))
    reader, dictionary, values = _Reader(data), None, []
    while len(values) < limit and reader.pos < len(data):
        header = reader.struct()
        payload = reader.take(header.get(3) or 0)
        kind = header.get(1)
        if kind == PAGE_DICTIONARY:
            dictionary = _plain_byte_arrays(_decompress(chunk.get(4), payload), (header.get(7) or {}).get(1) or 0)
            continue
        if kind == PAGE_DATA:
            page = header.get(5) or {}
            body, count, encoding = _decompress(chunk.get(4), payload), page.get(1) or 0, page.get(2)
            levels = [max_def] * count
            if max_def:
                length = struct.unpack("<I", body[:4])[0]
                levels, body = _hybrid(body[4:4 + length], max_def.bit_length(), count), body[4 + length:]
        elif kind == PAGE_DATA_V2:
            page = header.get(8) or {}
            count, encoding, def_len, rep_len = page.get(1) or 0, page.get(4), page.get(5) or 0, page.get(6) or 0
            levels = _hybrid(payload[rep_len:rep_len + def_len], max_def.bit_length(), count) if max_def else [max_def] * count
            rest = payload[rep_len + def_len:]
            body = _decompress(chunk.get(4), rest) if page.get(7, True) else rest
        else:
            continue
        present = sum(1 for level in levels if level == max_def)
        if encoding == ENCODING_PLAIN:
            found = _plain_byte_arrays(body, present)
        elif encoding in (ENCODING_PLAIN_DICTIONARY, ENCODING_RLE_DICTIONARY) and dictionary is not None and body:
            found = [dictionary[index] for index in _hybrid(body[1:], body[0], present)]
        else:
            raise Unreadable("encoding %s is not read" % encoding)
        found.reverse()
        values += [found.pop() if level == max_def else None for level in levels]
    return values[:limit]


def read_values(path, columns, limit=SAMPLE_ROWS):
    """{column path joined by '.': [text or None, ...]} of the first `limit` rows of the string columns `columns` (tuples)
    in the first row group; a column that is missing, not a string, repeated or not readable here is left out."""
    meta = footer(read_tail(path))
    root, _end = _tree(meta.get(2) or [], 0)
    leaves, found = _leaves(root), {}
    groups = meta.get(4) or []
    if not groups:
        return found
    chunks = {tuple(p.decode("utf-8", "replace") for p in (c.get(3) or {}).get(3) or []): c.get(3) or {} for c in groups[0].get(1) or []}
    with open(path, "rb") as handle:
        for column in columns:
            leaf, chunk = leaves.get(tuple(column)), chunks.get(tuple(column))
            if not leaf or not chunk or leaf[1] != "binary" or leaf[2]:
                continue
            try:
                values = _chunk_values(handle, chunk, leaf[0], limit)
            except (Unreadable, ParquetError, struct.error, zlib.error, IndexError):
                continue
            found[".".join(column)] = [None if value is None else value.decode("utf-8", "replace") for value in values]
    return found


def sample(path, limit=SAMPLE_ROWS):
    """What the reward needs of the first rows, small enough to travel: {'rows': how many were read, 'data_sources':
    {value: first row}, 'empty_ground_truth': [rows whose reward_model.ground_truth is empty or null]} (a key is missing when
    its column was not read), or {'error': why}."""
    try:
        values = read_values(path, (("data_source",), ("reward_model", "ground_truth")), limit)
    except (OSError, ParquetError, struct.error, UnicodeDecodeError) as exc:
        return {"error": str(exc)}
    result = {"rows": max([len(v) for v in values.values()] or [0])}
    if "data_source" in values:
        result["data_sources"] = {}
        for row, value in enumerate(values["data_source"]):
            result["data_sources"].setdefault(value if value is None else value[:200], row)
    if "reward_model.ground_truth" in values:
        result["empty_ground_truth"] = [row for row, value in enumerate(values["reward_model.ground_truth"])
                                        if value is None or not value.strip()]
    return result


# --------------------------------------------------------------------------- verl's rules

PREPROCESS = ("verl's preprocessing scripts write this shape: examples/data_preprocess/gsm8k.py (GSM8K), math_dataset.py "
              "(MATH), dapo_multiturn_w_tool.py and the recipe's data (recipe/dapo/prepare_dapo_data.sh: dapo-math-17k, "
              "aime-2024)")


def dataset_problems(variable, path, schema, prompt_key="prompt", min_rows=1):
    """What verl would fail on in one data set: sentences naming the file, the column, what was found and the fix."""
    if schema.get("error"):
        return ["%s=%s cannot be read as parquet: %s. Fix: give a parquet file (%s)." % (variable, path, schema["error"], PREPROCESS)]
    columns, fields, problems = schema.get("columns") or {}, schema.get("fields") or {}, []
    found = "it has the columns %s" % ", ".join("%s (%s)" % (name, kind) for name, kind in sorted(columns.items()))
    prompt = columns.get(prompt_key)
    if prompt is None:
        problems.append("%s=%s has no column %r, the prompt column verl reads (data.prompt_key); %s. verl would fail at dataset "
                        "load with KeyError: %r." % (variable, path, prompt_key, found, prompt_key))
    elif not (prompt.startswith("list<struct<") and {"role", "content"} <= set(fields.get(prompt_key) or {})):
        problems.append("%s=%s: the column %r is %s, but verl gives it to the chat template as a list of messages, "
                        "list<struct<role, content>>." % (variable, path, prompt_key, prompt))
    if "reward_model" not in columns:
        problems.append("%s=%s has no column 'reward_model' (a struct with ground_truth); %s. verl would fail after the first "
                        "rollout with KeyError: 'reward_model'." % (variable, path, found))
    elif "ground_truth" not in (fields.get("reward_model") or {}):
        problems.append("%s=%s: the column 'reward_model' is %s, without the field ground_truth the reward reads."
                        % (variable, path, columns["reward_model"]))
    if "data_source" not in columns:
        problems.append("%s=%s has no column 'data_source' (the reward function is chosen by it); %s. verl would fail scoring the "
                        "first rollout with NotImplementedError: Reward function is not implemented for data_source=."
                        % (variable, path, found))
    if problems:
        problems[-1] += " Fix: convert the data set to verl's format (%s; the raw GSM8K's question/answer columns become " \
                        "prompt, reward_model.ground_truth, data_source)." % PREPROCESS
    rows = schema.get("num_rows")
    if isinstance(rows, int) and rows < min_rows:
        # verl/trainer/ppo/ray_trainer.py (_create_dataloader): assert len(self.train_dataloader) >= 1, "Train dataloader is
        # empty!" (the train loader drops the last partial batch), and "Validation dataloader is empty!" for the test file.
        # Converting the format does not add rows: the fix is the batch or the data.
        if variable == "verl_train_file" and min_rows > 1:
            problems.append("%s=%s has %d row(s), fewer than one batch (verl_train_batch_size=%d): verl's train dataloader drops "
                            "the last partial batch, so it stops before the first step with 'AssertionError: Train dataloader is "
                            "empty!'. Fix: %suse a data set with at least %d rows." % (
                                variable, path, rows, min_rows,
                                "lower verl_train_batch_size to at most %d (and verl_ppo_mini_batch_size with it), or " % rows if rows else "",
                                min_rows))
        else:
            problems.append("%s=%s has no rows: verl stops before the first step with 'AssertionError: %s dataloader is empty!'. "
                            "Fix: give a %s with rows." % (variable, path, "Train" if variable == "verl_train_file" else "Validation",
                                                           variable))
    return problems


# verl v0.7.0's default_compute_score (verl/utils/reward_score/__init__.py): the data sources it has a reward function for,
# and any starting with "aime"; any other raises NotImplementedError(f"Reward function is not implemented for {data_source=}")
# at the first reward (the validation before training, or the first step).
REWARD_DATA_SOURCES = (
    "openai/gsm8k", "lighteval/MATH", "DigitalLearningGmbH/MATH-lighteval", "HuggingFaceH4/MATH-500", "math_dapo", "math",
    "math_dapo_reasoning", "numina_aops_forum", "numina_synthetic_math", "numina_amc_aime", "numina_synthetic_amc",
    "numina_cn_k12", "numina_olympiads", "codecontests", "apps", "codeforces", "taco", "hiyouga/geometry3k", "searchR1_nq",
    "searchR1_triviaqa", "searchR1_popqa", "searchR1_hotpotqa", "searchR1_2wikimultihopqa", "searchR1_musique",
    "searchR1_bamboogle")
CUSTOM_REWARD = "custom_reward_function.path"


def has_reward_function(data_source):
    return isinstance(data_source, str) and (data_source in REWARD_DATA_SOURCES or data_source.startswith("aime"))


def _rows(rows):
    shown = ", ".join(str(row) for row in rows[:5])
    return "row%s %s%s" % ("s" if len(rows) > 1 else "", shown, " ..." if len(rows) > 5 else "")


def values_problems(variable, path, read):
    """What verl's default reward would fail on in the first rows read (sample()): a data_source no reward function of
    verl 0.7.0 knows, an empty or null reward_model.ground_truth. Judged only where a custom reward function is not set."""
    problems = []
    unknown = {value: row for value, row in (read.get("data_sources") or {}).items() if not has_reward_function(value)}
    if unknown:
        shown = "; ".join("data_source=%r (from row %d)" % (value, row) for value, row in sorted(unknown.items(), key=lambda i: i[1]))
        problems.append(
            "%s=%s: %s in its first %d rows: no reward function of verl's knows it, so the first reward (the validation before "
            "training, or the first step's) fails with \"NotImplementedError: Reward function is not implemented for "
            "data_source=%r\". Fix: write the data source verl's reward function for this data is chosen by into the column "
            "data_source (e.g. openai/gsm8k for GSM8K, lighteval/MATH, math_dapo, aime-2024; the raw data set's path or name is "
            "not one), or give your own reward function with verl_extra_overrides: [custom_reward_function.path=<file>, "
            "custom_reward_function.name=<function>]." % (variable, path, shown, read.get("rows") or 0, min(unknown, key=unknown.get)))
    empty = read.get("empty_ground_truth") or []
    if empty:
        problems.append(
            "%s=%s: reward_model.ground_truth is empty or null in %s (of its first %d): the reward of those rows is always 0, or "
            "the reward function fails on null (math_dapo: AttributeError: 'NoneType' object has no attribute 'split'). Fix: fill "
            "in their ground truth, or leave those rows out of the data set." % (variable, path, _rows(empty), read.get("rows") or 0))
    return problems
