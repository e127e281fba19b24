/** Reading a console page as a person does: signing in on whatever page is open, and a definition list's figures. */
import type { Locator, Page } from 'playwright-core';

/** Signs in with `token` on the page open (it asks for one), and waits for the form to go. */
export async function signIn(page: Page, token: string): Promise<void> {
  const input = page.getByLabel('Bearer token');
  await input.waitFor();
  await input.fill(token);
  await page.keyboard.press('Enter');
  await input.waitFor({ state: 'detached' });
}

/** A definition list's figures as name → text. */
export async function figures(list: Locator): Promise<Record<string, string>> {
  const names = await list.locator('dt').allTextContents();
  const values = await list.locator('dd').allTextContents();
  return Object.fromEntries(names.map((name, index) => [name, values[index] ?? '']));
}
