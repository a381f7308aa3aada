"""Which versions of Apache Kafka share the bytecode of the methods docs/kafka-semantics.md cites for offset
expiry and OffsetDelete/DeleteGroups (issue 19: "citations to the source of every version tested").

Maven Central serves no sources jar of kafka-group-coordinator 4.2.2 or 4.4.0, so what the docs say of those
versions rests on this: each cited method is disassembled from the binary jars the tests run
(`javap -v -p`, one JVM per version for every class), normalised so that two builds of the same source
compare equal, and given a letter per version: the same letter is the same bytecode, "-" is no such
method. A change of letter between two versions sends a reader to the source (docs/kafka-semantics.md,
"Verified on Apache Kafka (per version)", explains each one).

What is normalised, and why each is a build artefact, not a change of source:
- constant-pool indices (`#123`, also in `invokedynamic #7:`): the pool is the whole class's, so a
  constant added anywhere in the class renumbers them; javap's comment keeps the resolved reference, which
  is compared instead;
- `ldc_w` is written `ldc`: javac picks the wide form only when the constant's pool index is above 255;
- bytecode offsets (branch targets, switch tables, exception table ranges) become instruction ordinals:
  an `ldc` turning `ldc_w` shifts every later offset by one byte, and switch padding depends on alignment;
- synthetic lambda bodies (`lambda$m$N`, Scala's `$anonfun$m$N`) are followed and compared as part of the
  method that creates them (a rule often lives in a lambda), renamed in order of first use: their counters
  number lambdas across the method or class, so one added elsewhere renumbers them;
- an invokedynamic's bootstrap method index is replaced by the bootstrap method and its arguments (which
  lambda, which string-concatenation recipe): the index is the class-wide table's;
- an enum switch's case numbers become the enum constants they stand for, read from the synthetic
  `Outer$1` holding javac's `$SwitchMap$` table (numbered by first appearance across the whole class, so the
  numbers alone could stay the same for a changed constant or change for an unchanged one); the holder's
  own number (`$1`, counting anonymous classes) is written `$N`;
- dropped: LineNumberTable, LocalVariableTable/TypeTable (debug data: lines move when the file above moves,
  local names are not behaviour), StackMapTable (derived from the code by the compiler, in byte offsets),
  and the method's generic Signature, annotations, MethodParameters and throws clauses (not executed).
One difference of compiler and one of packaging:
- 3.9.2 is compiled for Java 8 (class file 52), 4.x for Java 17 (61): for 8, javac calls a class's own private
  methods with `invokespecial` and binds its private lambdas with `REF_invokeSpecial`; for 11+ it writes
  `invokevirtual` / `REF_invokeVirtual` (nest-based access, JEP 181). Same call, counted equal. (Java 8 also
  reaches a nested class's private field through a synthetic `access$NNN` method: not normalised, so such a
  method differs between 3.9.2 and 4.0.2 although its source does not; docs/kafka-semantics.md says where.)
- classes Kafka moved to another package under the same name (`MOVED`) are named by their newest package.
Kept: the descriptor, access flags, max stack/locals, every instruction with its resolved operands (so a
changed callee signature is a change), the exception table. Not followed: the bodies of the methods a cited
one calls (other than its lambdas): a change inside a callee shows only where that callee is cited too.

Run: `python tests/support/kafka_method_fingerprints.py` prints the table docs/kafka-semantics.md holds;
`--diff 'ClassicGroup.offsetExpirationCondition' 4.0.2 4.1.2` prints the normalised difference;
`--dump METHOD VERSION` the normalised text. Jars come from the test cache (real_kafka.py, KOO_KAFKA_CACHE).
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import subprocess
import sys
import zipfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

CACHE = Path(os.environ.get("KOO_KAFKA_CACHE", Path.home() / ".cache" / "kafka-offset-operator" / "kafka"))
VERSIONS = ("3.9.2", "4.0.2", "4.1.2", "4.2.2", "4.3.1", "4.4.0")
GROUP = "org.apache.kafka.coordinator.group"


@dataclass(frozen=True)
class Cited:
    """A method docs/kafka-semantics.md cites: `qualified` is the class under `GROUP` (or a full name with
    `kafka.`), `method` its name; every overload counts unless `descriptor` (a substring of the JVM
    descriptor) picks some."""

    qualified: str
    method: str
    descriptor: str = ""

    @property
    def class_name(self) -> str:
        return self.qualified if self.qualified.startswith("kafka.") else f"{GROUP}.{self.qualified}"

    @property
    def label(self) -> str:
        short = self.qualified.removeprefix("kafka.server.")
        suffix = f"({self.descriptor.strip('/;')})" if self.descriptor else ""
        return f"{short}.{self.method}{suffix}"


# The methods of the sections "Offset expiration", "What keeps an offset alive", "Offsets of deleted topics"
# and "Expiration rules (analysis)", in that order of the rules.
CITED: tuple[Cited, ...] = (
    Cited("OffsetExpirationConditionImpl", "isOffsetExpired"),
    Cited("OffsetAndMetadata", "fromRecord"),
    Cited("Utils", "ofSentinel"),
    Cited("GroupCoordinatorShard", "scheduleGroupMetadataExpiration"),
    Cited("GroupCoordinatorShard", "cleanupGroupMetadata"),
    Cited("OffsetMetadataManager", "cleanupExpiredOffsets"),
    Cited("GroupMetadataManager", "maybeDeleteGroup"),
    Cited("Group", "shouldExpire"),
    Cited("classic.ClassicGroup", "offsetExpirationCondition"),
    Cited("classic.ClassicGroup", "isSubscribedToTopic"),
    Cited("classic.ClassicGroup", "computeSubscribedTopics"),
    Cited("classic.ClassicGroup", "initNextGeneration"),
    Cited("classic.ClassicGroup", "add"),
    Cited("modern.ModernGroup", "isSubscribedToTopic"),
    Cited("modern.consumer.ConsumerGroup", "updateResolvedRegularExpression"),
    Cited("GroupMetadataManager", "getOrMaybeCreatePersistedConsumerGroup"),
    Cited("modern.consumer.ConsumerGroup", "maybeUpdateGroupState"),
    Cited("modern.ModernGroupMember", "isReconciledTo"),
    Cited("GroupMetadataManager", "consumerGroupFenceMember"),
    Cited("modern.consumer.ConsumerGroup", "offsetExpirationCondition"),
    Cited("streams.StreamsGroup", "offsetExpirationCondition"),
    Cited("streams.StreamsGroup", "isSubscribedToTopic"),
    Cited("streams.StreamsTopology", "computeSourceTopicMap"),
    Cited("streams.StreamsGroup", "createGroupTombstoneRecords"),
    Cited("modern.share.ShareGroup", "shouldExpire"),
    Cited("modern.share.ShareGroup", "offsetExpirationCondition"),
    Cited("streams.StreamsGroup", "shouldExpire"),
    Cited("OffsetMetadataManager", "commitOffset"),
    Cited("GroupCoordinatorRecordHelpers", "offsetCommitValueVersion"),
    Cited("OffsetMetadataManager", "replay"),
    Cited("GroupMetadataManager", "replay", "/GroupMetadataKey;"),
    Cited("GroupMetadataManager", "updateStaticMemberThenRebalanceOrCompleteJoin"),
    Cited("GroupCoordinatorService", "partitionFor"),
    Cited("kafka.server.KafkaApis", "handleOffsetDeleteRequest"),
    Cited("GroupCoordinatorService", "deleteOffsets"),
    Cited("OffsetMetadataManager", "deleteOffsets"),
    Cited("classic.ClassicGroup", "validateOffsetDelete"),
    Cited("modern.consumer.ConsumerGroup", "validateOffsetDelete"),
    Cited("streams.StreamsGroup", "validateOffsetDelete"),
    Cited("modern.share.ShareGroup", "validateOffsetDelete"),
    Cited("modern.share.ShareGroup", "validateOffsetCommit"),
    Cited("modern.share.ShareGroup", "validateOffsetFetch"),
    Cited("GroupCoordinatorService", "onPartitionsDeleted"),
    Cited("GroupCoordinatorShard", "onPartitionsDeleted"),
    Cited("OffsetMetadataManager", "onPartitionsDeleted"),
    Cited("GroupCoordinatorService", "handleTopicsDeletion"),
    Cited("GroupCoordinatorShard", "onTopicsDeleted"),
    Cited("OffsetMetadataManager", "onTopicsDeleted"),
    Cited("kafka.server.KafkaApis", "handleDeleteGroupsRequest"),
    Cited("GroupCoordinatorShard", "deleteGroups"),
    Cited("GroupMetadataManager", "validateDeleteGroup"),
    Cited("classic.ClassicGroup", "validateDeleteGroup"),
    Cited("modern.consumer.ConsumerGroup", "validateDeleteGroup"),
    Cited("OffsetMetadataManager", "deleteAllOffsets"),
    Cited("GroupMetadataManager", "getOrMaybeCreateClassicGroup"),
    Cited("OffsetMetadataManager", "validateOffsetCommit"),
)


@dataclass
class Method:
    """One method of a javap -v dump: its header line, descriptor, flags and the raw lines of its Code."""

    name: str
    descriptor: str = ""
    flags: str = ""
    code: list[str] = field(default_factory=list)


@dataclass
class ClassDump:
    """One class of a javap -v dump: its internal name, class file major version, methods and bootstrap
    methods (index -> the lines describing it, pool indices included)."""

    internal_name: str
    major: str = ""
    methods: list[Method] = field(default_factory=list)
    bootstrap: dict[str, list[str]] = field(default_factory=dict)

    def named(self, name: str) -> list[Method]:
        return [m for m in self.methods if m.name == name and "ACC_BRIDGE" not in m.flags]


_CLASS_HEADER = re.compile(r"^(?:[\w.]+ )*(?:class|interface|enum) ([\w.$]+)")
_MEMBER_NAME = re.compile(r"([\w$<>]+)\(")
_BOOTSTRAP_ENTRY = re.compile(r"^  (\d+): (.*)$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def parse(javap_output: str) -> dict[str, ClassDump]:
    """The classes of `javap -v -p` output, by dotted name. Only what the fingerprint reads is kept.

    Layout read: a class header, `{`, members (a header at indent 2 ending in `;`, its attributes at indent 4,
    the attributes of its Code at indent 6: `stack=...`, the instructions (deeper), `Exception table:`,
    LineNumberTable...), `}`, then the class attributes, among them `BootstrapMethods:`."""
    classes: dict[str, ClassDump] = {}
    current: ClassDump | None = None
    member: Method | None = None
    section = ""  # "members" inside { }, "bootstrap" in BootstrapMethods, "" elsewhere
    code = ""  # inside a member: "keep" (instructions, exception table), "skip" (debug tables), "" (no Code)
    bootstrap_index = ""
    for line in javap_output.splitlines():
        indent = _indent(line)
        if line.startswith("Classfile "):
            current, member, section = None, None, ""
            continue
        if current is None:
            header = _CLASS_HEADER.match(line) if indent == 0 else None
            if header is not None:
                current = ClassDump(header.group(1).replace(".", "/"))
                classes[header.group(1)] = current
            continue
        if section != "members" and line.startswith("  major version:"):
            current.major = line.split(":", 1)[1].strip()
        elif line == "{":
            section = "members"
        elif line == "}":
            section, member = "", None
        elif not line.strip():
            continue
        elif indent == 0:
            section = "bootstrap" if line.startswith("BootstrapMethods:") else ""
        elif section == "bootstrap":
            entry = _BOOTSTRAP_ENTRY.match(line)
            if entry is not None:
                bootstrap_index = entry.group(1)
                current.bootstrap[bootstrap_index] = [entry.group(2)]
            elif line.strip() != "Method arguments:" and bootstrap_index:
                current.bootstrap[bootstrap_index].append(line.strip())
        elif section != "members":
            continue
        elif indent == 2:
            found = _MEMBER_NAME.search(line) if line.rstrip().endswith(";") else None
            member = Method(found.group(1)) if found is not None else None  # None: a field
            if line.strip() == "static {};":
                member = Method("<clinit>")
            if member is not None:
                current.methods.append(member)
            code = ""
        elif member is None:
            continue
        elif indent == 4:
            stripped = line.strip()
            if stripped.startswith("descriptor: "):
                member.descriptor = stripped.split(": ", 1)[1]
            elif stripped.startswith("flags: "):
                member.flags = stripped.split(": ", 1)[1]
            code = "keep" if stripped == "Code:" else ""
        elif indent == 6 and code:
            stripped = line.strip()
            code = "keep" if stripped.startswith("stack=") or stripped == "Exception table:" else "skip"
            if code == "keep":
                member.code.append(line)
        elif code == "keep":
            member.code.append(line)
    return classes


_INSTRUCTION = re.compile(r"^\s+(\d+): ([a-z][a-z_0-9]*)\b\s*(.*)$")
_SWITCH_CASE = re.compile(r"^\s+(-?\d+|default): (\d+)$")
_EXCEPTION_ROW = re.compile(r"^\s+(\d+)\s+(\d+)\s+(\d+)\s+(.*)$")
_POOL_INDEX = re.compile(r"#\d+(,\s*)?")
_INDY = re.compile(r"// InvokeDynamic #(\d+):")
_BRANCHES = {
    "ifeq", "ifne", "iflt", "ifge", "ifgt", "ifle", "if_icmpeq", "if_icmpne", "if_icmplt", "if_icmpge",
    "if_icmpgt", "if_icmple", "if_acmpeq", "if_acmpne", "goto", "goto_w", "jsr", "jsr_w", "ifnull",
    "ifnonnull",
}
# javap names a method of the class itself without its class: `invokespecial // Method name:(...)`.
_OWN_PRIVATE_CALL = re.compile(r"^#\d+\s+// Method (?!\"<init>\")[\w$]+:")
# Classes Kafka moved to another package under the same name: the coordinator runtime left group-coordinator
# for coordinator-common in 4.0 (3.9: org.apache.kafka.coordinator.group.runtime); 4.4 moved utilities of
# kafka-clients to org.apache.kafka.common.utils.internals. A cited method calling them as before is the same
# code; a change inside them is outside the cited method either way.
MOVED = (
    ("org/apache/kafka/coordinator/group/runtime/", "org/apache/kafka/coordinator/common/runtime/"),
    *((f"org/apache/kafka/common/utils/{name}", f"org/apache/kafka/common/utils/internals/{name}")
      for name in ("LogContext", "ImplicitLinkedHashCollection", "BufferSupplier")),
)
SYNTHETIC = re.compile(r"(?:lambda|\$anonfun)\$[\w$]+")


def _operand(text: str) -> str:
    """An instruction's operands without constant-pool indices: `#313  // Method X.get:()V` -> `// Method
    X.get:()V`; an invokeinterface's count (`#228,  1`) stays."""
    return re.sub(r"\s+", " ", _POOL_INDEX.sub("", text)).strip()


_SWITCH_MAP_FIELD = re.compile(r"// Field ([\w/$]+)\$(?:\d+|N)\.(\$SwitchMap\$[\w$]+):\[I")
_OWN_SWITCH_MAP = re.compile(r"^getstatic // Field (\$SwitchMap\$[\w$]+):\[I$")
_ENUM_CONSTANT = re.compile(r"^getstatic // Field ([\w/$]+)\.(\w+):L")
_INT_PUSH = re.compile(r"^(?:iconst_(\d)|bipush (\d+)|sipush (\d+))$")


def switch_maps(dumps: Iterable[ClassDump]) -> dict[str, dict[str, str]]:
    """What javac's enum switch tables mean: `Outer.$SwitchMap$pkg$Enum` -> case number -> enum constant,
    read from the static initialisers of the synthetic classes (`Outer$1`) that hold them. javac numbers
    the cases of a class's switches on one enum in order of first appearance, so the numbers alone are a
    property of the whole class, and a changed case constant could keep its number."""
    maps: dict[str, dict[str, str]] = {}
    for dump in dumps:
        for method in dump.methods:
            if method.name != "<clinit>":
                continue
            outer = re.sub(r"\$\d+$", "", dump.internal_name)
            lines = normalise_code(method.code, dump.bootstrap)
            for i, line in enumerate(lines):
                field = _OWN_SWITCH_MAP.match(line)  # the holder names its own field without its class
                if field is None or i + 4 >= len(lines):
                    continue
                constant = _ENUM_CONSTANT.match(lines[i + 1])
                number = _INT_PUSH.match(lines[i + 3])
                if constant is None or number is None or lines[i + 4] != "iastore":
                    continue
                key = f"{outer}.{field.group(1)}"
                maps.setdefault(key, {})[next(g for g in number.groups() if g is not None)] = constant.group(2)
    return maps


def moved(text: str) -> str:
    """`text` with the classes Kafka moved between packages (same names) under their newest package."""
    for old, new in MOVED:
        text = text.replace(old, new)
    return text


def normalise_code(code: Sequence[str], bootstrap: dict[str, list[str]], internal_name: str = "",
                   enum_switches: dict[str, dict[str, str]] | None = None) -> list[str]:
    """One method's Code lines (as `parse` keeps them) in a build-independent form: see the module docstring.
    `internal_name` is the method's class (`a/b/C`); `enum_switches` (`switch_maps`) turns the case numbers
    of an enum switch into the enum's constants. Lambda names are left as they are; `fingerprint` renames
    them across the method and its lambdas."""
    ordinals: dict[str, int] = {}
    for line in code:
        found = _INSTRUCTION.match(line)
        if found is not None:
            ordinals[found.group(1)] = len(ordinals)

    def target(offset: str) -> str:
        return f"@{ordinals.get(offset, -1)}" if offset in ordinals else f"@end+{offset}"

    out: list[str] = []
    in_exceptions = False
    cases: dict[str, str] = {}  # the enum switch table read last: case number -> constant
    for line in code:
        stripped = line.strip()
        if stripped.startswith("stack="):
            out.append(stripped)
            continue
        if stripped == "Exception table:":
            in_exceptions = True
            out.append(stripped)
            continue
        if in_exceptions:
            row = _EXCEPTION_ROW.match(line)
            if row is not None:
                start, end, handler, kind = row.groups()
                out.append(f"{target(start)} {target(end)} {target(handler)} {kind.strip()}")
            continue
        case = _SWITCH_CASE.match(line)
        if case is not None:
            out.append(f"  {cases.get(case.group(1), case.group(1))}: {target(case.group(2))}")
            continue
        if stripped == "}":
            out.append("}")
            continue
        found = _INSTRUCTION.match(line)
        if found is None:
            continue
        opcode, operands = found.group(2), found.group(3)
        if opcode == "ldc_w":
            opcode = "ldc"
        if opcode == "invokespecial" and _OWN_PRIVATE_CALL.search(operands):
            opcode = "invokevirtual"
        if opcode in _BRANCHES:
            operands = target(operands.strip())
        elif opcode == "invokedynamic":
            indy = _INDY.search(operands)
            if indy is not None:
                resolved = " | ".join(_operand(part) for part in bootstrap.get(indy.group(1), ["?"]))
                operands = _operand(operands[: indy.start()] + f"// InvokeDynamic [{resolved}]:" + operands[indy.end():])
            else:
                operands = _operand(operands)
        elif opcode in ("tableswitch", "lookupswitch"):
            operands = "{"
        else:
            operands = _operand(operands)
            table = _SWITCH_MAP_FIELD.search(operands) if opcode == "getstatic" else None
            if table is not None:
                cases = (enum_switches or {}).get(f"{table.group(1)}.{table.group(2)}", {})
                # The holder's number (`Outer$1`) counts the class's anonymous classes: not the method's.
                operands = _SWITCH_MAP_FIELD.sub(lambda m: f"// Field {m.group(1)}$N.{m.group(2)}:[I", operands)
        if internal_name:
            operands = operands.replace(f"REF_invokeSpecial {internal_name}.", f"REF_invokeVirtual {internal_name}.")
        out.append(moved(f"{opcode} {operands}".rstrip()))
    return out


def _referenced_synthetics(lines: Iterable[str], internal_name: str) -> Iterator[str]:
    """Names of this class's lambda bodies that `lines` call or bind, in order of appearance."""
    for line in lines:
        for found in SYNTHETIC.finditer(line):
            before = line[: found.start()]
            # `X.lambda$m$0` with X this class, or an unqualified name (javap omits the current class).
            if before.endswith(f"{internal_name}.") or before.endswith(" ") or before.endswith("["):
                yield found.group(0)


def fingerprint(dump: ClassDump, cited: Cited, enum_switches: dict[str, dict[str, str]] | None = None) -> str | None:
    """The normalised text of a cited method (every selected overload, by descriptor) followed by the lambda
    bodies it reaches, lambdas renamed `λ1, λ2, ...` by first use. None when the class has no such method."""
    methods = sorted((m for m in dump.named(cited.method) if cited.descriptor in m.descriptor),
                     key=lambda m: m.descriptor)
    if not methods:
        return None
    names: dict[str, str] = {}
    queue: list[Method] = list(methods)
    blocks: list[list[str]] = []
    done: set[int] = set()
    while queue:
        method = queue.pop(0)
        if id(method) in done:
            continue
        done.add(id(method))
        lines = normalise_code(method.code, dump.bootstrap, dump.internal_name, enum_switches)
        for name in _referenced_synthetics(lines, dump.internal_name):
            if name not in names:
                names[name] = f"λ{len(names) + 1}"
                queue.extend(dump.named(name))
        blocks.append([moved(f"{names.get(method.name, method.name)} {method.descriptor} {method.flags}"), *lines])

    def rename(line: str) -> str:
        return SYNTHETIC.sub(lambda found: names.get(found.group(0), found.group(0)), line)

    return "\n".join(rename(line) for block in blocks for line in block) + "\n"


def libs(version: str, cache: Path = CACHE) -> Path:
    return cache / version / "libs"


def jars_present(versions: Sequence[str] = VERSIONS, cache: Path = CACHE) -> str | None:
    """None when every version's jars are in the cache, else a sentence naming what is missing."""
    for version in versions:
        for jar in (f"kafka-group-coordinator-{version}.jar", f"kafka_2.13-{version}.jar"):
            if not (libs(version, cache) / jar).is_file():
                return f"{libs(version, cache) / jar} is missing (tests/support/real_kafka.py resolves it)"
    return None


def disassemble(version: str, classes: Sequence[str], cache: Path = CACHE) -> dict[str, ClassDump]:
    """Every class of `classes` from one version's jars, in one javap JVM."""
    home = libs(version, cache)
    classpath = os.pathsep.join(str(home / jar) for jar in (f"kafka-group-coordinator-{version}.jar",
                                                             f"kafka_2.13-{version}.jar"))
    # A short-lived JVM: C1 only and the serial collector cost a third of the default's CPU (no C2 threads).
    done = subprocess.run(["javap", "-J-XX:TieredStopAtLevel=1", "-J-XX:+UseSerialGC", "-v", "-p", "-cp", classpath,
                           *classes], capture_output=True, text=True, check=False)
    # javap exits non-zero when a class is not found (a class added in a later version) and dumps the rest.
    return parse(done.stdout)


def switch_holders(version: str, classes: Iterable[str], cache: Path = CACHE) -> list[str]:
    """The numbered synthetic classes (`Outer$1`: enum switch tables, anonymous classes) of `classes` in the
    group coordinator's jar, read from its table of contents (no JVM)."""
    wanted = {name.replace(".", "/") for name in classes}
    numbered = re.compile(r"^(.+)\$\d+\.class$")
    with zipfile.ZipFile(libs(version, cache) / f"kafka-group-coordinator-{version}.jar") as jar:
        return sorted(entry[: -len(".class")].replace("/", ".") for entry in jar.namelist()
                      if (found := numbered.match(entry)) is not None and found.group(1) in wanted)


def fingerprints(versions: Sequence[str] = VERSIONS, cited: Sequence[Cited] = CITED,
                 cache: Path = CACHE) -> dict[str, dict[str, str | None]]:
    """label -> version -> normalised text (None: no such class or method)."""
    classes = sorted({c.class_name for c in cited})
    table: dict[str, dict[str, str | None]] = {c.label: {} for c in cited}
    for version in versions:
        dumps = disassemble(version, [*classes, *switch_holders(version, classes, cache)], cache)
        enum_switches = switch_maps(dumps.values())
        for c in cited:
            dump = dumps.get(c.class_name)
            table[c.label][version] = fingerprint(dump, c, enum_switches) if dump is not None else None
    return table


def letters(row: dict[str, str | None], versions: Sequence[str]) -> list[str]:
    """A letter per version, in order of first appearance: the same letter for the same text, "-" for None."""
    seen: dict[str, str] = {}
    out: list[str] = []
    for version in versions:
        text = row.get(version)
        if text is None:
            out.append("-")
            continue
        out.append(seen.setdefault(text, chr(ord("A") + len(seen))))
    return out


def markdown(table: dict[str, dict[str, str | None]], versions: Sequence[str]) -> str:
    lines = ["| method | " + " | ".join(versions) + " |", "|---|" + "---|" * len(versions)]
    for label, row in table.items():
        lines.append(f"| `{label}` | " + " | ".join(letters(row, versions)) + " |")
    return "\n".join(lines) + "\n"


def find(label: str) -> Cited | str:
    """The cited method `label` names (its label or a dotted tail of it), or a one-line error."""
    matches = [c for c in CITED if c.label == label or c.label.endswith("." + label)]
    if len(matches) == 1:
        return matches[0]
    return f"{label!r} names {len(matches)} cited methods; one of: {', '.join(c.label for c in CITED)}"


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--versions", default=",".join(VERSIONS), help="comma-separated Kafka versions")
    parser.add_argument("--diff", nargs=3, metavar=("METHOD", "V1", "V2"),
                        help="the normalised difference of one cited method between two versions")
    parser.add_argument("--dump", nargs=2, metavar=("METHOD", "VERSION"), help="one method's normalised text")
    args = parser.parse_args(argv)
    versions = [v for v in args.versions.split(",") if v]
    if args.diff is not None or args.dump is not None:
        label, *chosen = args.diff if args.diff is not None else args.dump
        cited = find(label)
        missing = cited if isinstance(cited, str) else jars_present(chosen)
        if missing is not None or isinstance(cited, str):
            print(f"kafka_method_fingerprints: {missing}", file=sys.stderr)
            return 2
        texts = [fingerprints(chosen[i:i + 1], [cited])[cited.label][chosen[i]] or "" for i in range(len(chosen))]
        if args.dump is not None:
            sys.stdout.write(texts[0] or "(no such method)\n")
        else:
            sys.stdout.writelines(difflib.unified_diff(texts[0].splitlines(True), texts[1].splitlines(True),
                                                       chosen[0], chosen[1]))
        return 0
    missing = jars_present(versions)
    if missing is not None:
        print(f"kafka_method_fingerprints: {missing}", file=sys.stderr)
        return 2
    sys.stdout.write(markdown(fingerprints(versions), versions))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
