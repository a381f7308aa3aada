// A Kafka share consumer (KIP-932, KafkaShareConsumer) driven by a test over stdin/stdout
// (tests/support/java_clients.py starts it).
//
// Usage: ShareDriver <bootstrap> <group> <topic,topic,...> [key=value ...]
// Before subscribing it sets the group's share.auto.offset.reset to earliest (a group config, KIP-932:
// IncrementalAlterConfigs on the GROUP resource; the default, latest, would skip the records already there).
// It polls every 50 ms and acknowledges implicitly (the next poll accepts what the last one delivered).
// It prints one line per event:
//   READY                          subscribed (before the first poll)
//   RECEIVED <n>                   whenever the number of records delivered so far grows
//   ERROR <class>: <message>       a poll failed (the driver keeps running)
//   CLOSED                         after `close` (the member leaves the share group)
// Commands, one per line on stdin: `close` (close() and exit 0). End of stdin closes it too.
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.LinkedBlockingQueue;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class ShareDriver {
    public static void main(String[] args) throws Exception {
        Properties admin = new Properties();
        admin.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        try (Admin client = Admin.create(admin)) {
            ConfigResource group = new ConfigResource(ConfigResource.Type.valueOf("GROUP"), args[1]);  // by name: 3.9 has no GROUP
            AlterConfigOp earliest = new AlterConfigOp(
                    new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET);
            client.incrementalAlterConfigs(Map.of(group, List.of(earliest))).all().get();
        }

        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, args[1]);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        DriverIO.putConfigs(props, args, 3);

        LinkedBlockingQueue<String> commands = DriverIO.commands();

        try (KafkaShareConsumer<byte[], byte[]> consumer = new KafkaShareConsumer<>(props)) {
            consumer.subscribe(Arrays.asList(args[2].split(",")));
            DriverIO.say("READY");
            long received = 0;
            while (true) {
                try {
                    ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(50));
                    if (!records.isEmpty()) {
                        received += records.count();
                        DriverIO.say("RECEIVED " + received);
                    }
                } catch (Exception e) {
                    DriverIO.say("ERROR " + e.getClass().getSimpleName() + ": " + e.getMessage());
                }
                String command;
                while ((command = commands.poll()) != null) {
                    if (command.equals("close")) {
                        consumer.close();
                        DriverIO.say("CLOSED");
                        return;
                    }
                }
            }
        }
    }
}
