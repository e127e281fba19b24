import { LocalMessagesApi } from './local-messages-api';
import { SupportDesk } from './support-desk';

/** Runs one triage offline, then one routed to `anthropic` on a local Messages API, and prints both. */
async function main(): Promise<void> {
  const offline = await SupportDesk.start({ store: 'sqlite::memory:', readStore: ':memory:', answerStore: ':memory:' });
  try {
    await offline.setUp('scripted', 10_000);
    const { result, explanation, settledCharge } = await offline.triage('The printer on floor 3 is on fire');
    console.log('offline  :', JSON.stringify(result.answer), `charge ${result.charge} (settled event: ${settledCharge})`);
    console.log('           ', explanation?.sentence);
  } finally {
    await offline.close();
  }

  const api = await LocalMessagesApi.start();
  const routed = await SupportDesk.start({
    store: 'sqlite::memory:',
    readStore: ':memory:',
    answerStore: ':memory:',
    anthropic: { apiKey: 'local-key', baseURL: api.baseURL },
  });
  try {
    await routed.setUp('anthropic', 10_000);
    const { result } = await routed.triage('I was charged twice');
    console.log('anthropic:', JSON.stringify(result.answer), `charge ${result.charge}`);
    if (result.outcome !== 'completed') throw new Error(`the anthropic-routed triage ended ${result.outcome ?? result.state}`);
  } finally {
    await routed.close();
    await api.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
