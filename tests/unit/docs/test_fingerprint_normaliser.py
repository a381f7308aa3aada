"""The bytecode fingerprints behind docs/kafka-semantics.md's per-version table (tests/support/
kafka_method_fingerprints.py) count two builds of one source as the same and a changed method as changed.
The samples are javap -v -p text in the shape javap 17 prints, written here (no jar is read)."""

from __future__ import annotations

import kafka_method_fingerprints as fp
import real_kafka

CITED = fp.Cited("Demo", "expiry")


def dump(body: str, *, lambdas: str = "", bootstrap: str = "", debug: str = "") -> str:
    """One class `org.apache.kafka.coordinator.group.Demo` with `expiry()` (whose Code is `body`), other
    members (`lambdas`) and BootstrapMethods (`bootstrap`); `debug` goes where javac puts debug tables."""
    return f"""Classfile jar:file:///x.jar!/org/apache/kafka/coordinator/group/Demo.class
  Last modified Mar 3, 2026; size 1773 bytes
  Compiled from "Demo.java"
public class org.apache.kafka.coordinator.group.Demo
  minor version: 0
  major version: 61
  flags: (0x0021) ACC_PUBLIC, ACC_SUPER
Constant pool:
   #1 = Methodref          #2.#3          // java/lang/Object."<init>":()V
{{
  private final long retention;
    descriptor: J
    flags: (0x0012) ACC_PRIVATE, ACC_FINAL

  public boolean expiry(long);
    descriptor: (J)Z
    flags: (0x0001) ACC_PUBLIC
    Code:
      stack=4, locals=3, args_size=2
{body}{debug}
    Signature: #61                          // (J)Z
{lambdas}}}
SourceFile: "Demo.java"
BootstrapMethods:
{bootstrap}InnerClasses:
  public static final #99= #98 of #97;    // Lookup=class java/lang/invoke/MethodHandles$Lookup
"""


# A method that loads a string constant, branches over it and calls a private helper and a lambda.
BODY = """         0: {ldc} #{s}{pad}// String OffsetExpired
         {o1}: pop
         {o2}: lload_1
         {o3}: lconst_0
         {o4}: lcmp
         {o5}: ifle          {target}
         {o6}: aload_0
         {o7}: invokedynamic #{indy},  0            // InvokeDynamic #{bsm}:test:()Ljava/util/function/LongPredicate;
         {o8}: pop
         {o9}: aload_0
         {o10}: {call} #{h}                 // Method helper:()Z
         {o11}: ireturn
         {target}: iconst_{result}
         {o13}: ireturn
"""


def body(*, wide: bool = False, result: int = 0, call: str = "invokevirtual", s: int = 7, indy: int = 40,
         bsm: int = 0, h: int = 12) -> str:
    """BODY with its offsets as javac writes them: `ldc_w` (a pool index above 255) takes 3 bytes, `ldc` 2."""
    start = 3 if wide else 2
    sizes = [1, 1, 1, 1, 3, 1, 5, 1, 1, 3, 1]  # pop .. ireturn: the bytes of each instruction after the ldc
    offsets = [start]
    for size in sizes:
        offsets.append(offsets[-1] + size)
    names = {f"o{i}": offsets[i - 1] for i in range(1, 12)}
    names["o13"] = offsets[-1] + 1
    return BODY.format(ldc="ldc_w" if wide else "ldc", s=s, pad="  " if wide else "     ", target=offsets[-1],
                       result=result, call=call, indy=indy, bsm=bsm, h=h, **names)


def lambda_member(number: int) -> str:
    return f"""
  private static boolean lambda$expiry${number}(long);
    descriptor: (J)Z
    flags: (0x100a) ACC_PRIVATE, ACC_STATIC, ACC_SYNTHETIC
    Code:
      stack=4, locals=2, args_size=1
         0: lload_0
         1: lconst_0
         2: lcmp
         3: ifle          10
         6: iconst_1
         7: goto          11
        10: iconst_0
        11: ireturn
      LineNumberTable:
        line 40: 0
"""


def bootstrap(index: int, number: int, kind: str = "REF_invokeStatic") -> str:
    return f"""  {index}: #80 REF_invokeStatic java/lang/invoke/LambdaMetafactory.metafactory:(Ljava/lang/invoke/MethodHandles$Lookup;)Ljava/lang/invoke/CallSite;
    Method arguments:
      #81 (J)Z
      #{82 + index} {kind} org/apache/kafka/coordinator/group/Demo.lambda$expiry${number}:(J)Z
      #81 (J)Z
"""


def fingerprint(text: str) -> str | None:
    return fp.fingerprint(fp.parse(text)["org.apache.kafka.coordinator.group.Demo"], CITED)


BASE = dump(body(), lambdas=lambda_member(0), bootstrap=bootstrap(0, 0))


def test_another_build_of_the_same_source_has_the_same_fingerprint() -> None:
    """Pool indices, ldc_w and the offsets it shifts, the lambda's counter, the bootstrap table's index and the
    debug tables all differ; the code does not."""
    other = dump(body(wide=True, s=300, indy=412, bsm=3, h=77), lambdas=lambda_member(5),
                 bootstrap=bootstrap(0, 9) + bootstrap(3, 5),
                 debug="      LineNumberTable:\n        line 99: 0\n      StackMapTable: number_of_entries = 1\n"
                       "        frame_type = 12 /* same */\n")
    assert fingerprint(BASE) is not None
    assert fingerprint(other) == fingerprint(BASE)
    assert "λ1" in (fingerprint(BASE) or "") and "lambda$" not in (fingerprint(BASE) or "")


def test_a_changed_constant_a_changed_lambda_or_a_changed_callee_changes_the_fingerprint() -> None:
    assert fingerprint(dump(body(result=1), lambdas=lambda_member(0), bootstrap=bootstrap(0, 0))) != fingerprint(BASE)
    changed_lambda = lambda_member(0).replace("lconst_0", "lconst_1")
    assert fingerprint(dump(body(), lambdas=changed_lambda, bootstrap=bootstrap(0, 0))) != fingerprint(BASE)
    other_callee = body().replace("helper:()Z", "helper2:()Z")
    assert fingerprint(dump(other_callee, lambdas=lambda_member(0), bootstrap=bootstrap(0, 0))) != fingerprint(BASE)


def test_java_8_class_files_call_private_methods_as_java_17_ones_do() -> None:
    """Kafka 3.9 is compiled for Java 8 (class file 52): a private method is called with invokespecial and a
    private lambda bound with REF_invokeSpecial; for 11+ javac writes invokevirtual (nest-based access)."""
    java8 = dump(body(call="invokespecial"), lambdas=lambda_member(0), bootstrap=bootstrap(0, 0, "REF_invokeSpecial"))
    java17 = dump(body(), lambdas=lambda_member(0), bootstrap=bootstrap(0, 0, "REF_invokeVirtual"))
    assert fingerprint(java8) == fingerprint(java17)
    constructor = fp.normalise_code(['         0: invokespecial #1                  // Method "<init>":()V'], {})
    assert constructor == ['invokespecial // Method "<init>":()V']


def test_classes_moved_to_another_package_under_the_same_name_compare_equal() -> None:
    old = ["         0: getfield      #9   // Field timer:Lorg/apache/kafka/coordinator/group/runtime/CoordinatorTimer;"]
    new = ["         0: getfield      #31  // Field timer:Lorg/apache/kafka/coordinator/common/runtime/CoordinatorTimer;"]
    assert fp.normalise_code(old, {}) == fp.normalise_code(new, {})
    unrelated = ["         0: getfield      #31  // Field timer:Lorg/apache/kafka/coordinator/group/Other;"]
    assert fp.normalise_code(unrelated, {}) != fp.normalise_code(new, {})


def test_switch_tables_and_exception_ranges_point_at_instructions_not_bytes() -> None:
    narrow = ["         0: ldc           #5   // int 3", "         2: tableswitch   { // 0 to 1",
              "                       0: 28", "                       1: 30", "                 default: 32",
              "            }", "        28: iconst_0", "        29: ireturn", "        30: iconst_1",
              "        31: ireturn", "        32: iconst_2", "        33: ireturn", "      Exception table:",
              "         from    to  target type", "             0    28    32   Class java/lang/Exception"]
    # ldc_w is a byte longer and the table's padding moves with it: every later offset differs.
    wide = ["         0: ldc_w         #500 // int 3", "         3: tableswitch   { // 0 to 1",
            "                       0: 32", "                       1: 34", "                 default: 36",
            "            }", "        32: iconst_0", "        33: ireturn", "        34: iconst_1",
            "        35: ireturn", "        36: iconst_2", "        37: ireturn", "      Exception table:",
            "         from    to  target type", "             0    32    36   Class java/lang/Exception"]
    assert fp.normalise_code(narrow, {}) == fp.normalise_code(wide, {})
    assert "  0: @2" in fp.normalise_code(narrow, {})


def test_an_absent_method_or_class_is_a_dash_and_letters_follow_first_appearance() -> None:
    assert fp.fingerprint(fp.parse(BASE)["org.apache.kafka.coordinator.group.Demo"], fp.Cited("Demo", "gone")) is None
    versions = ("1", "2", "3", "4")
    assert fp.letters({"1": None, "2": "x", "3": "y", "4": "x"}, versions) == ["-", "A", "B", "A"]


def test_an_overload_is_picked_by_its_descriptor() -> None:
    two = BASE.replace("  public boolean expiry(long);\n    descriptor: (J)Z",
                       "  public boolean expiry(long);\n    descriptor: (J)Z").replace(
        "{\n  private final long", "{\n  public boolean expiry(int);\n    descriptor: (I)Z\n"
        "    flags: (0x0001) ACC_PUBLIC\n    Code:\n      stack=1, locals=2, args_size=2\n"
        "         0: iconst_0\n         1: ireturn\n\n  private final long")
    classes = fp.parse(two)
    demo = classes["org.apache.kafka.coordinator.group.Demo"]
    assert len(demo.named("expiry")) == 2
    assert fp.fingerprint(demo, fp.Cited("Demo", "expiry", "(J)")) == fingerprint(BASE)
    assert fp.fingerprint(demo, fp.Cited("Demo", "expiry")) != fingerprint(BASE)


def test_the_tool_reads_the_versions_and_cache_the_tests_run() -> None:
    assert fp.VERSIONS == real_kafka.VERSIONS
    assert fp.CACHE == real_kafka.CACHE


def test_a_method_is_named_by_a_dotted_tail_of_its_label_and_an_ambiguous_name_gets_one_line() -> None:
    found = fp.find("StreamsGroup.isSubscribedToTopic")
    assert isinstance(found, fp.Cited) and found.qualified == "streams.StreamsGroup"
    ambiguous = fp.find("isSubscribedToTopic")
    assert isinstance(ambiguous, str) and "names 3 cited methods" in ambiguous and "\n" not in ambiguous


def holder(order: tuple[str, ...]) -> str:
    """`Demo$1`, javac's holder of Demo's switch table on State: case numbers given in order of `order`."""
    entries = "".join(f"""        {9 * i}: getstatic     #2   // Field $SwitchMap$demo$State:[I
        {9 * i + 3}: getstatic     #{10 + i}  // Field demo/State.{name}:Ldemo/State;
        {9 * i + 6}: invokevirtual #5   // Method demo/State.ordinal:()I
        {9 * i + 7}: iconst_{i + 1}
        {9 * i + 8}: iastore
""" for i, name in enumerate(order))
    return f"""Classfile jar:file:///x.jar!/org/apache/kafka/coordinator/group/Demo$1.class
class org.apache.kafka.coordinator.group.Demo$1
  major version: 61
{{
  static {{}};
    descriptor: ()V
    flags: (0x0008) ACC_STATIC
    Code:
      stack=3, locals=1, args_size=0
{entries}        99: return
}}
"""


def switch_on(first_case: str) -> list[str]:
    return ["         0: getstatic     #7   // Field org/apache/kafka/coordinator/group/Demo$1.$SwitchMap$demo$State:[I",
            "         3: aload_0", "         4: iaload", "         5: lookupswitch  { // 1",
            f"                       {first_case}: 28", "                 default: 30", "            }",
            "        28: iconst_1", "        29: ireturn", "        30: iconst_0", "        31: ireturn"]


def test_an_enum_switch_compares_by_its_constants_not_by_javacs_case_numbers() -> None:
    """javac numbers a class's enum cases in order of first appearance across all its switches, in a
    synthetic `Outer$1`; the tool reads that class, so case 1 of one build and case 2 of another are
    the same when both mean DEAD, and different when they mean different constants."""
    dead_first = fp.switch_maps(fp.parse(holder(("DEAD", "EMPTY"))).values())
    empty_first = fp.switch_maps(fp.parse(holder(("EMPTY", "DEAD"))).values())
    assert dead_first == {"org/apache/kafka/coordinator/group/Demo.$SwitchMap$demo$State": {"1": "DEAD", "2": "EMPTY"}}
    same = fp.normalise_code(switch_on("1"), {}, enum_switches=dead_first)
    assert same == fp.normalise_code(switch_on("2"), {}, enum_switches=empty_first)
    assert "  DEAD: @4" in same
    assert fp.normalise_code(switch_on("1"), {}, enum_switches=empty_first) != same
