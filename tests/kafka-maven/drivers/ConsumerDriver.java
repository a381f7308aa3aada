// A Kafka Java consumer driven by a test over stdin/stdout (tests/support/java_clients.py starts it).
//
// Usage: ConsumerDriver <bootstrap> <group> <protocol: classic|consumer> <topic,topic,...|regex:RE2J> [key=value ...]
// The extra key=value pairs are consumer configs (e.g. group.instance.id=a for a static member).
// `regex:ord.*` subscribes by a broker-side regular expression (KIP-848's SubscriptionPattern, Kafka 4.0+,
// protocol consumer only): Kafka resolves it, not the client. Reached by reflection so that the driver still
// compiles against Kafka 3.9's clients, which lack the class.
// It subscribes and polls every 50 ms. It prints one line per event:
//   READY                          subscribed (before the first poll)
//   ASSIGNED t:p,t:p               whenever its assignment changes (also to nothing)
//   COMMITTED                      after a `commit` command succeeded
//   POSITION t:p=o,...             answer to `position`
//   ERROR <class>: <message>       a command failed (the driver keeps running)
//   CLOSED                         after `close` (LeaveGroup for classic, a leave heartbeat for consumer)
// Commands, one per line on stdin:
//   commit t:p=o,t:p=o             commitSync of those offsets (member id and epoch of this member)
//   position                       the consumer's positions of its assignment
//   close                          close() and exit 0
// End of stdin closes it too. Nothing here decides anything: the test asserts through Kafka's wire protocol.
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.LinkedBlockingQueue;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class ConsumerDriver {
    private static String names(Set<TopicPartition> partitions) {
        TreeSet<String> sorted = new TreeSet<>();
        for (TopicPartition tp : partitions) sorted.add(tp.topic() + ":" + tp.partition());
        return String.join(",", sorted);
    }

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, args[1]);
        props.put("group.protocol", args[2]);
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        if (args[2].equals("classic")) {
            props.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "500");
            props.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "10000");
        }
        DriverIO.putConfigs(props, args, 4);
        String subscription = args[3];

        LinkedBlockingQueue<String> commands = DriverIO.commands();

        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            if (subscription.startsWith("regex:")) {
                Class<?> pattern = Class.forName("org.apache.kafka.clients.consumer.SubscriptionPattern");
                Object regex = pattern.getConstructor(String.class).newInstance(subscription.substring(6));
                KafkaConsumer.class.getMethod("subscribe", pattern).invoke(consumer, regex);
            } else {
                consumer.subscribe(Arrays.asList(subscription.split(",")));
            }
            DriverIO.say("READY");
            String assigned = null;
            while (true) {
                consumer.poll(Duration.ofMillis(50));
                String now = names(consumer.assignment());
                if (!now.equals(assigned)) {
                    assigned = now;
                    DriverIO.say("ASSIGNED " + now);
                }
                String command;
                while ((command = commands.poll()) != null) {
                    if (command.isEmpty()) continue;
                    if (command.equals("close")) {
                        consumer.close();
                        DriverIO.say("CLOSED");
                        return;
                    }
                    try {
                        if (command.startsWith("commit ")) {
                            Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                            for (String item : command.substring(7).split(",")) {
                                String[] tpo = item.split("[:=]");
                                offsets.put(new TopicPartition(tpo[0], Integer.parseInt(tpo[1])),
                                        new OffsetAndMetadata(Long.parseLong(tpo[2])));
                            }
                            consumer.commitSync(offsets, Duration.ofSeconds(30));
                            DriverIO.say("COMMITTED");
                        } else if (command.equals("position")) {
                            List<String> items = new ArrayList<>();
                            for (TopicPartition tp : consumer.assignment()) {
                                items.add(tp.topic() + ":" + tp.partition() + "=" + consumer.position(tp));
                            }
                            DriverIO.say("POSITION " + String.join(",", items));
                        } else {
                            DriverIO.say("ERROR IllegalArgumentException: unknown command " + command);
                        }
                    } catch (Exception e) {
                        DriverIO.say("ERROR " + e.getClass().getSimpleName() + ": " + e.getMessage());
                    }
                }
            }
        }
    }
}
