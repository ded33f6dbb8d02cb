// kafkajs's transactional producer against the broker (tests/all/transactions.rs): a committed
// transaction over two partitions, an aborted one, and one that also commits a group's offset
// (sendOffsets: AddOffsetsToTxn + TxnOffsetCommit); then a kafkajs consumer, read_committed by
// default, must see exactly the committed records, and the group's offset must be the one
// sent. Prints what it saw as JSON; exits 1 with the reason on any difference.
//
//   node kafkajs_transactions.js --bootstrap HOST:PORT --topic NAME
const { Kafka, logLevel } = require('kafkajs');

function arg(name) {
  const i = process.argv.indexOf(name);
  if (i < 0 || i + 1 >= process.argv.length) throw new Error(`missing ${name}`);
  return process.argv[i + 1];
}

async function main() {
  const bootstrap = arg('--bootstrap');
  const topic = arg('--topic');
  const kafka = new Kafka({ clientId: 'seedlog-kafkajs', brokers: [bootstrap], logLevel: logLevel.ERROR, retry: { retries: 10 } });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 2, replicationFactor: 1 }], waitForLeaders: true });

  const producer = kafka.producer({ transactionalId: 'kafkajs-txn', idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  let t = await producer.transaction();
  await t.send({ topic, messages: [{ partition: 0, value: 'c1' }, { partition: 1, value: 'c2' }] });
  await t.commit();
  t = await producer.transaction();
  await t.send({ topic, messages: [{ partition: 0, value: 'a1' }, { partition: 1, value: 'a2' }] });
  await t.abort();
  t = await producer.transaction();
  await t.send({ topic, messages: [{ partition: 0, value: 'c3' }] });
  await t.sendOffsets({ consumerGroupId: 'kafkajs-eos', topics: [{ topic, partitions: [{ partition: 0, offset: '2' }] }] });
  await t.commit();
  await producer.disconnect();

  const consumer = kafka.consumer({ groupId: 'kafkajs-reader', readUncommitted: false });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const seen = [];
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`read_committed saw only ${JSON.stringify(seen)} in 60 s`)), 60000);
    consumer.run({
      eachMessage: async ({ message }) => {
        seen.push(message.value.toString());
        if (seen.length >= 3) {
          clearTimeout(timer);
          resolve();
        }
      },
    });
  });
  // Anything aborted would come with or after the last committed record: give it a moment.
  await new Promise((r) => setTimeout(r, 1500));
  await consumer.disconnect();
  const offsets = await admin.fetchOffsets({ groupId: 'kafkajs-eos', topics: [topic] });
  await admin.disconnect();

  const got = [...seen].sort();
  if (JSON.stringify(got) !== JSON.stringify(['c1', 'c2', 'c3'])) throw new Error(`read_committed saw ${JSON.stringify(seen)}, not c1 c2 c3`);
  const p0 = offsets[0].partitions.find((p) => p.partition === 0);
  if (!p0 || p0.offset !== '2') throw new Error(`the group's offset is ${JSON.stringify(offsets)}, not 2 on partition 0`);
  console.log(JSON.stringify({ seen, offsets }));
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e && e.stack ? e.stack : e);
    process.exit(1);
  },
);
