import { usePageTitle } from '../components/common';

export function NotFoundPage() {
  usePageTitle('No such page');
  return (
    <>
      <h1>No such page</h1>
      <p>
        The console has pages for <code>/console/invocations/:id</code>, <code>/console/organizations/:id</code> and{' '}
        <code>/console/operations/:id</code>. <a href="/console">Open one by its id.</a>
      </p>
    </>
  );
}
